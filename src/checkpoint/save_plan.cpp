#include "checkpoint/save_plan.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "checkpoint/commit.h"
#include "strider/autograd/grad_mode.h"
#include "strider/checkpoint/run_directory.h"
#include "strider/core/error.h"
#include "strider/core/generator.h"
#include "strider/dist/consistency.h"
#include "strider/optim/settings_description.h"

namespace strider::checkpoint::detail {
namespace {

using Json = nlohmann::json;
constexpr const char* kOp = "checkpoint save";

struct Held {
  Holding holding;
  bool optimized = false;  // a parameter or one of its moments: only optimizer.step() writes it
};

// Every tensor of `state` as this rank holds it, under its checkpoint key.
std::vector<Held> holdings(const TrainingState& state, const ModelLayout& layout, int rank, int world) {
  std::vector<Held> out;
  for (const ParamView& p : layout.params) out.push_back({p.holding, true});
  for (const Holding& b : layout.buffers) out.push_back({b, false});
  if (state.optimizer)
    for (const auto& [oname, t] : state.optimizer->params()) {
      auto it = state.optimizer->state().find(oname);
      if (it == state.optimizer->state().end()) continue;  // not stepped yet
      const ParamView& p = param_of(layout, t, oname);
      for (const auto& [key, s] : it->second)
        out.push_back({state_holding(p, key, s, rank, world), s.sizes() == p.padded.sizes()});
    }
  return out;
}

DimVector local_shape(const Piece& p) {
  DimVector s = p.global_shape;
  if (!s.empty()) s[0] = p.row_end - p.row_begin;
  return s;
}

}  // namespace

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

// The plan's manifest completed from every rank's report of the file it wrote.
Manifest complete_manifest(const SavePlan& plan, const std::vector<std::string>& reports) {
  Manifest m = plan.manifest;
  for (size_t r = 0; r < reports.size(); ++r) {
    const Json rep = Json::parse(reports[r]);
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
      it->second.shards.push_back(
          {static_cast<int64_t>(r), p["rows"][0].get<int64_t>(), p["rows"][1].get<int64_t>(), p["offset"].get<uint64_t>()});
    }
    if (rep.contains("rng")) m.rng.push_back(rep["rng"].get<std::string>());
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
  STRIDER_CHECK(m.rng.empty() || m.rng.size() == reports.size(), kOp, m.rng.size(), " of ", reports.size(),
                " ranks saved their random state; the ranks' TrainingState::rng differ");
  return m;
}

SavePlan plan_save(const std::string& run_dir, int64_t step, const TrainingState& state, int rank, int world,
                   bool snapshot_all_but_optimized) {
  autograd::NoGradGuard no_grad;
  SavePlan plan;
  plan.rank = rank;
  plan.world = world;
  plan.run_dir = run_dir;
  plan.pending = pending_dir(run_dir, step);
  plan.final_dir = run_dir + "/" + checkpoint_dir_name(step);
  const ModelLayout layout = describe_model(*state.model, rank, world);
  // A loader takes "local" for one process's save (parse_manifest refuses more ranks).
  STRIDER_CHECK(layout.strategy != "local" || world == 1, kOp, "the model is not wrapped (DDP or FSDP) but the "
                "process group has ", world, " ranks; a plain model is saved by one process: save it without a "
                "process group, or wrap it for data parallelism");
  Manifest& m = plan.manifest;
  m.step = step;
  m.world_size = world;
  m.strategy = layout.strategy;
  m.units = layout.units;
  for (const Held& h : holdings(state, layout, rank, world)) {
    m.tensors[h.holding.key] = TensorRecord{h.holding.rows.dtype(), h.holding.global_shape, {}};
    auto piece = piece_to_write(h.holding);
    if (!piece) continue;
    if (!h.optimized && snapshot_all_but_optimized) piece->data = piece->data.clone();
    if (h.optimized) plan.live.push_back({piece->key, piece->data, piece->data.storage()->generation()});
    plan.pieces.push_back(std::move(*piece));
  }
  if (state.optimizer) {
    m.optimizer = state.optimizer->name();
    m.optimizer_steps = state.optimizer->step_count();
    const auto differing = state.optimizer->param_steps_differing();
    for (const auto& [oname, t] : state.optimizer->params())
      if (auto d = differing.find(oname); d != differing.end())
        m.optimizer_param_steps[param_of(layout, t, oname).name] = d->second;
  }
  if (state.scheduler) m.scheduler_step = state.scheduler->last_step();
  if (state.data) m.data = *state.data;
  if (state.user) m.user = *state.user;
  if (state.rng) plan.rng = default_generator().state();
  return plan;
}

std::string write_rank_file(const SavePlan& plan, uint64_t block_bytes, const std::function<void()>& data_read) {
  bool signalled = false;
  auto signal = [&] {
    if (!signalled && data_read) data_read();
    signalled = true;
  };
  try {
    autograd::NoGradGuard no_grad;
    std::error_code ec;
    std::filesystem::create_directories(plan.pending, ec);
    STRIDER_CHECK(!ec, kOp, "cannot create ", plan.pending, ": ", ec.message());
    std::vector<PieceLayout> layout;
    for (const Piece& p : plan.pieces) layout.push_back({p.key, p.data.dtype(), local_shape(p), p.row_begin, p.row_end});
    ShardFileWriter writer(plan.pending, rank_file_name(plan.rank, plan.world), layout, block_bytes);
    for (const Piece& p : plan.pieces) writer.write(p.data);
    signal();  // the rest (checksum, fsync, rename) no longer reads the training state
    const WrittenFile wf = writer.finish();
    Json rep = {{"ok", true},
                {"file", {{"name", wf.record.name}, {"bytes", wf.record.bytes}, {"header_bytes", wf.record.header_bytes},
                          {"block_bytes", wf.record.block_bytes}, {"blocks", wf.record.blocks}}},
                {"pieces", Json::array()}};
    for (size_t i = 0; i < plan.pieces.size(); ++i)
      rep["pieces"].push_back({{"key", plan.pieces[i].key},
                               {"rows", {plan.pieces[i].row_begin, plan.pieces[i].row_end}},
                               {"offset", wf.offsets[i]}});
    if (!plan.rng.empty()) rep["rng"] = plan.rng;
    return rep.dump(-1, ' ', false, Json::error_handler_t::replace);
  } catch (const std::exception& e) {
    signal();
    return Json{{"ok", false}, {"error", e.what()}}.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
}

// Every rank's file, in the pending directory as the committing rank sees it, with the size its
// rank reported. Ranks whose run directory names different directories (a relative path on
// node-local disks) each wrote into their own; a manifest listing files that are elsewhere would
// commit an unloadable checkpoint.
void check_files_present(const SavePlan& plan, const Manifest& m) {
  namespace fs = std::filesystem;
  for (size_t r = 0; r < m.files.size(); ++r) {
    const FileRecord& f = m.files[r];
    const fs::path path = fs::path(plan.pending) / f.name;
    std::error_code ec;
    const uintmax_t size = fs::file_size(path, ec);
    const std::string found = ec ? "is not there (" + ec.message() + ")" : "has " + std::to_string(size) + " bytes";
    STRIDER_CHECK(!ec && size == f.bytes, kOp, "rank ", r, "'s file ", f.name, " (", f.bytes,
                  " bytes, as rank ", r, " reports writing it) ", found, " in ", fs::absolute(path).parent_path().string(),
                  " as rank ", plan.rank, " sees it: the ranks' run directory '", plan.run_dir,
                  "' is not one shared directory (node-local disks, or a relative path from different working "
                  "directories). Give every rank the same directory on a shared file system");
  }
}

std::string commit_save(const SavePlan& plan, dist::ProcessGroup* pg, const std::string& report, int keep_last) {
  const int64_t step = plan.manifest.step;
  const auto reports = pg ? dist::all_gather_strings(*pg, "checkpoint save: each rank's file", report)
                          : std::vector<std::string>{report};
  const std::string failed = first_failure(reports, "writing the checkpoint's shards");
  STRIDER_CHECK(failed.empty(), kOp, "step ", step, ": ", failed, "; the latest checkpoint is still the previous one");

  std::string commit_error;
  if (plan.rank == 0) {
    try {
      const Manifest m = complete_manifest(plan, reports);
      check_files_present(plan, m);
      write_file_atomically(plan.pending, kManifestName, format_manifest(m));
      std::set<std::string> keep{kManifestName};
      for (const FileRecord& f : m.files) keep.insert(f.name);
      commit_pending(plan.run_dir, plan.pending, plan.final_dir, keep);
      clean_run_directory(plan.run_dir, keep_last);
    } catch (const std::exception& e) {
      commit_error = e.what();
    }
  }
  if (pg) commit_error = dist::all_gather_strings(*pg, "checkpoint save: the commit", commit_error)[0];
  STRIDER_CHECK(commit_error.empty(), kOp, "step ", step, ": committing on rank 0 failed: ", commit_error,
                "; the latest checkpoint is still the previous one");
  return plan.final_dir;
}

void validate_options(const std::string& run_dir, const CheckpointOptions& options, const char* who) {
  STRIDER_CHECK(!run_dir.empty(), who, "the run directory is empty");
  STRIDER_CHECK(options.keep_last >= 0, who, "keep_last ", options.keep_last, " is negative");
  STRIDER_CHECK(options.block_bytes >= 4096 && options.block_bytes <= (uint64_t{1} << 30), who, "block_bytes ",
                options.block_bytes, " is outside [4096, 1 GiB]");
}

void check_save_request(int64_t step, const TrainingState& state, dist::ProcessGroup* pg) {
  STRIDER_CHECK(state.model, "checkpoint save", "TrainingState::model is null; a checkpoint needs the model");
  STRIDER_CHECK(step >= 0, "checkpoint save", "step ", step, " is negative");
  if (pg) dist::check_same_across_ranks(*pg, "the checkpoint step", {std::to_string(step)});
  // Ranks stepping with other optimizer settings hold replicas (or shards) of diverged models;
  // a save would mix their rows into one checkpoint.
  if (pg && state.optimizer)
    dist::check_same_across_ranks(*pg, "the checkpoint's optimizer kind and param group options",
                                  optim::describe_settings(*state.optimizer));
}

std::string changed_since_planned(const SavePlan& plan) {
  for (const SavePlan::Live& l : plan.live)
    if (l.rows.storage()->generation() != l.generation) return l.key;
  return {};
}

}  // namespace strider::checkpoint::detail
