#include "strider/checkpoint/checkpointer.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "checkpoint/commit.h"
#include "checkpoint/holdings.h"
#include "strider/autograd/grad_mode.h"
#include "strider/checkpoint/run_directory.h"
#include "strider/core/error.h"
#include "strider/core/generator.h"
#include "strider/dist/consistency.h"

namespace strider::checkpoint {
namespace {

using detail::Holding;
using detail::Piece;
using Json = nlohmann::json;
constexpr const char* kOp = "checkpoint save";

// Every tensor of `state` as this rank holds it, under its checkpoint key.
std::vector<Holding> holdings(const TrainingState& state, const detail::ModelLayout& layout, int rank, int world) {
  std::vector<Holding> out;
  for (const detail::ParamView& p : layout.params) out.push_back(p.holding);
  out.insert(out.end(), layout.buffers.begin(), layout.buffers.end());
  if (state.optimizer)
    for (const auto& [oname, t] : state.optimizer->params()) {
      auto it = state.optimizer->state().find(oname);
      if (it == state.optimizer->state().end()) continue;  // not stepped yet
      const detail::ParamView& p = detail::param_of(layout, t, oname);
      for (const auto& [key, s] : it->second) out.push_back(detail::state_holding(p, key, s, rank, world));
    }
  return out;
}

// Rank 0's manifest from every rank's report of the file it wrote.
Manifest build_manifest(int64_t step, const TrainingState& state, const detail::ModelLayout& layout,
                        const std::vector<Holding>& held, const std::vector<Json>& reports, int world) {
  Manifest m;
  m.step = step;
  m.world_size = world;
  m.strategy = layout.strategy;
  m.units = layout.units;
  for (const Holding& h : held) m.tensors[h.key] = TensorRecord{h.rows.dtype(), h.global_shape, {}};
  for (int r = 0; r < world; ++r) {
    const Json& rep = reports[static_cast<size_t>(r)];
    FileRecord f;
    f.name = rep["file"]["name"].get<std::string>();
    f.bytes = rep["file"]["bytes"].get<uint64_t>();
    f.header_bytes = rep["file"]["header_bytes"].get<uint64_t>();
    f.block_bytes = rep["file"]["block_bytes"].get<uint64_t>();
    f.blocks = rep["file"]["blocks"].get<std::vector<uint32_t>>();
    m.files.push_back(std::move(f));
    for (const Json& p : rep["pieces"]) {
      const std::string key = p["key"].get<std::string>();
      auto it = m.tensors.find(key);
      STRIDER_CHECK(it != m.tensors.end(), kOp, "rank ", r, " wrote tensor '", key,
                    "' that rank 0 does not hold; the ranks' models or optimizers differ");
      it->second.shards.push_back({r, p["rows"][0].get<int64_t>(), p["rows"][1].get<int64_t>(), p["offset"].get<uint64_t>()});
    }
    if (state.rng) m.rng.push_back(rep["rng"].get<std::string>());
  }
  for (auto& [key, t] : m.tensors) {
    std::sort(t.shards.begin(), t.shards.end(), [](const auto& a, const auto& b) { return a.row_begin < b.row_begin; });
    int64_t next = 0;
    for (const ShardRecord& s : t.shards) {
      STRIDER_CHECK(s.row_begin == next, kOp, "tensor '", key, "': rows [", next, ", ", s.row_begin,
                    ") were written by no rank, or twice; the ranks' layouts differ");
      next = s.row_end;
    }
    STRIDER_CHECK(next == t.rows(), kOp, "tensor '", key, "': rows [", next, ", ", t.rows(),
                  ") were written by no rank; the ranks' layouts differ");
  }
  if (state.optimizer) {
    m.optimizer = state.optimizer->name();
    m.optimizer_steps = state.optimizer->step_count();
  }
  if (state.scheduler) m.scheduler_step = state.scheduler->last_step();
  if (state.data) m.data = *state.data;
  if (state.user) m.user = *state.user;
  return m;
}

// Each rank's outcome as one line of JSON, so a failure on any rank reaches all of them.
std::string write_own_file(const std::string& pending, const std::vector<Holding>& held, const TrainingState& state,
                           int rank, int world, uint64_t block_bytes) {
  try {
    std::error_code ec;
    std::filesystem::create_directories(pending, ec);
    STRIDER_CHECK(!ec, kOp, "cannot create ", pending, ": ", ec.message());
    std::vector<Piece> pieces;
    for (const Holding& h : held)
      if (auto p = detail::piece_to_write(h)) pieces.push_back(std::move(*p));
    const detail::WrittenFile wf = detail::write_shard_file(pending, detail::rank_file_name(rank, world), pieces, block_bytes);
    Json rep = {{"ok", true},
                {"file", {{"name", wf.record.name}, {"bytes", wf.record.bytes}, {"header_bytes", wf.record.header_bytes},
                          {"block_bytes", wf.record.block_bytes}, {"blocks", wf.record.blocks}}},
                {"pieces", Json::array()}};
    for (size_t i = 0; i < pieces.size(); ++i)
      rep["pieces"].push_back({{"key", pieces[i].key}, {"rows", {pieces[i].row_begin, pieces[i].row_end}},
                               {"offset", wf.offsets[i]}});
    if (state.rng) rep["rng"] = default_generator().state();
    return rep.dump(-1, ' ', false, Json::error_handler_t::replace);
  } catch (const std::exception& e) {
    return Json{{"ok", false}, {"error", e.what()}}.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
}

// The first failure among the ranks' outcomes, or "".
std::string first_failure(const std::vector<std::string>& outcomes, const char* what) {
  for (size_t r = 0; r < outcomes.size(); ++r) {
    if (outcomes[r].empty()) continue;
    const Json j = Json::parse(outcomes[r], nullptr, false);
    if (j.is_object() && j.value("ok", false)) continue;
    return std::string(what) + " failed on rank " + std::to_string(r) + ": " +
           (j.is_object() ? j.value("error", std::string("?")) : outcomes[r]);
  }
  return {};
}

}  // namespace

Checkpointer::Checkpointer(std::string run_dir, std::shared_ptr<dist::ProcessGroup> pg, CheckpointOptions options)
    : run_dir_(std::move(run_dir)), pg_(std::move(pg)), options_(options) {
  STRIDER_CHECK(!run_dir_.empty(), "Checkpointer", "the run directory is empty");
  STRIDER_CHECK(options_.keep_last >= 0, "Checkpointer", "keep_last ", options_.keep_last, " is negative");
  STRIDER_CHECK(options_.block_bytes >= 4096 && options_.block_bytes <= (uint64_t{1} << 30), "Checkpointer",
                "block_bytes ", options_.block_bytes, " is outside [4096, 1 GiB]");
}

std::string Checkpointer::save(int64_t step, const TrainingState& state) {
  autograd::NoGradGuard no_grad;
  STRIDER_CHECK(state.model, kOp, "TrainingState::model is null; a checkpoint needs the model");
  STRIDER_CHECK(step >= 0, kOp, "step ", step, " is negative");
  const int rank = pg_ ? pg_->rank() : 0, world = pg_ ? pg_->size() : 1;
  if (pg_) dist::check_same_across_ranks(*pg_, "the checkpoint step", {std::to_string(step)});
  const std::string pending = detail::pending_dir(run_dir_, step);
  const std::string final_dir = run_dir_ + "/" + checkpoint_dir_name(step);
  const detail::ModelLayout layout = detail::describe_model(*state.model, rank, world);
  const std::vector<Holding> held = holdings(state, layout, rank, world);

  const std::string mine = write_own_file(pending, held, state, rank, world, options_.block_bytes);
  const auto reports = pg_ ? dist::all_gather_strings(*pg_, "checkpoint save: each rank's file", mine)
                           : std::vector<std::string>{mine};
  const std::string failed = first_failure(reports, "writing the checkpoint's shards");
  STRIDER_CHECK(failed.empty(), kOp, "step ", step, ": ", failed, "; the latest checkpoint is still the previous one");

  std::string commit_error;
  if (rank == 0) {
    try {
      std::vector<Json> parsed;
      for (const std::string& r : reports) parsed.push_back(Json::parse(r));
      const Manifest m = build_manifest(step, state, layout, held, parsed, world);
      detail::write_file_atomically(pending, kManifestName, format_manifest(m));
      std::set<std::string> keep{kManifestName};
      for (const FileRecord& f : m.files) keep.insert(f.name);
      detail::commit_pending(run_dir_, pending, final_dir, keep);
      detail::clean_run_directory(run_dir_, options_.keep_last);
    } catch (const std::exception& e) {
      commit_error = e.what();
    }
  }
  if (pg_) {
    const auto outcome = dist::all_gather_strings(*pg_, "checkpoint save: the commit", commit_error);
    commit_error = outcome[0];
  }
  STRIDER_CHECK(commit_error.empty(), kOp, "step ", step, ": committing on rank 0 failed: ", commit_error);
  return final_dir;
}

}  // namespace strider::checkpoint
