#include "strider/checkpoint/load.h"

#include <nlohmann/json.hpp>
#include <set>

#include "checkpoint/holdings.h"
#include "checkpoint/shard_file.h"
#include "strider/autograd/grad_mode.h"
#include "strider/checkpoint/run_directory.h"
#include "strider/core/error.h"
#include "strider/core/generator.h"
#include "strider/dist/consistency.h"
#include "strider/fsdp/distributed_data_parallel.h"
#include "strider/fsdp/fully_sharded_data_parallel.h"
#include "strider/io/sha256.h"
#include "strider/nn/state_dict.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"

namespace strider::checkpoint {
namespace {

using detail::Holding;
using Json = nlohmann::json;
constexpr const char* kOp = "checkpoint load";

// Reads rows [begin, end) of the checkpoint's tensor `key` into `dst` (contiguous, those rows).
void read_rows(detail::VerifiedReader& reader, const std::string& key, const TensorRecord& rec, int64_t begin,
               int64_t end, Tensor& dst) {
  const uint64_t row_bytes = rec.row_bytes();
  char* out = static_cast<char*>(dst.data());
  for (const ShardRecord& s : rec.shards) {
    const int64_t a = std::max(begin, s.row_begin), b = std::min(end, s.row_end);
    if (a >= b) continue;
    reader.read(s.file, s.offset + static_cast<uint64_t>(a - s.row_begin) * row_bytes,
                static_cast<uint64_t>(b - a) * row_bytes, out + static_cast<uint64_t>(a - begin) * row_bytes,
                "tensor '" + key + "' rows [" + std::to_string(a) + ", " + std::to_string(b) + ")");
  }
}

// The record of `key`, checked against what this run holds.
const TensorRecord& record_for(const Manifest& m, const std::string& dir, const std::string& key, ScalarType dtype,
                               IntArrayRef shape) {
  auto it = m.tensors.find(key);
  STRIDER_CHECK(it != m.tensors.end(), kOp, dir, " has no tensor '", key, "' (this run's ", shape, " ", dtype,
                "); it was saved from a different model or without that state");
  STRIDER_CHECK(it->second.dtype == dtype && IntArrayRef(it->second.shape) == shape, kOp, dir, ": tensor '", key,
                "' is ", IntArrayRef(it->second.shape), " ", it->second.dtype, " in the checkpoint but ", shape, " ",
                dtype, " in this run");
  return it->second;
}

// The rows `h` holds, read into `dst` (contiguous, shaped like h.rows).
void stage_into(detail::VerifiedReader& reader, const Manifest& m, const std::string& dir, const Holding& h,
                Tensor& dst) {
  const TensorRecord& rec = record_for(m, dir, h.key, h.rows.dtype(), h.global_shape);
  const int64_t rows = h.global_shape.empty() ? 1 : h.rows.size(0);
  read_rows(reader, h.key, rec, h.row_offset, h.row_offset + rows, dst);
}

// The rows `h` holds, read into a fresh contiguous tensor.
Tensor stage(detail::VerifiedReader& reader, const Manifest& m, const std::string& dir, const Holding& h) {
  Tensor t = empty(h.rows.sizes(), h.rows.dtype());
  stage_into(reader, m, dir, h, t);
  return t;
}

struct Staged {
  std::map<std::string, Tensor> model;  // a state dict the model's load_state_dict takes
  optim::OptimizerState optimizer;
  std::map<std::string, int64_t> optimizer_param_steps;  // by the optimizer's names
  std::string rng;
};

Staged stage_all(const Manifest& m, const std::string& dir, const TrainingState& state, const LoadOptions& options,
                 int rank, int world) {
  const detail::ModelLayout layout = detail::describe_model(*state.model, rank, world);
  detail::VerifiedReader reader(dir, m);
  Staged out;
  std::set<std::string> expected;
  const bool sharded = layout.strategy != "local";
  for (const detail::ParamView& p : layout.params) {
    expected.insert(p.holding.key);
    out.model[p.name] = stage(reader, m, dir, p.holding);
    if (sharded && !p.holding.global_shape.empty())
      out.model[nn::kShardEntryPrefix + p.name] =
          tensor(std::vector<int64_t>{p.holding.row_offset, p.holding.global_shape[0]});
  }
  for (const Holding& b : layout.buffers) {
    expected.insert(b.key);
    out.model[b.key.substr(6)] = stage(reader, m, dir, b);
  }
  if (sharded) nn::mark_state_dict(out.model, {nn::StateDictKind::Sharded, rank, world});

  optim::Optimizer* opt = options.optimizer ? state.optimizer : nullptr;
  if (opt) {
    STRIDER_CHECK(!m.optimizer.empty(), kOp, dir, " holds no optimizer state; load with LoadOptions{.optimizer = "
                  "false} to start the optimizer afresh");
    STRIDER_CHECK(m.optimizer == opt->name(), kOp, dir, " holds ", m.optimizer, " state but the optimizer is ",
                  opt->name(), "; use the same optimizer, or load with LoadOptions{.optimizer = false}");
    const std::vector<std::string> keys = opt->state_keys();
    for (const auto& [oname, t] : opt->params()) {
      const detail::ParamView& p = detail::param_of(layout, t, oname);
      if (auto s = m.optimizer_param_steps.find(p.name); s != m.optimizer_param_steps.end())
        out.optimizer_param_steps[oname] = s->second;
      for (const std::string& key : keys) {
        const std::string k = optimizer_key(p.name, key);
        auto it = m.tensors.find(k);
        if (it == m.tensors.end()) continue;  // not stepped when saved; load_state checks completeness
        expected.insert(k);
        const ScalarType state_dtype = opt->state_dtype(t);
        STRIDER_CHECK(it->second.dtype == state_dtype, kOp, dir, ": optimizer state '", k, "' is ", it->second.dtype,
                      " but this run's ", opt->name(), " keeps ", state_dtype, " state; load with the state dtype it "
                      "was saved with (AdamOptions::state_dtype, trainer --optimizer-state-dtype), or start the "
                      "optimizer afresh (LoadOptions{.optimizer = false}, trainer --reset-optimizer)");
        Tensor s;
        if (IntArrayRef(it->second.shape) == IntArrayRef(p.holding.global_shape)) {
          s = zeros_like(p.padded, state_dtype);  // padding rows stay zero
          Holding h = detail::state_holding(p, key, s, rank, world);
          if (h.rows.is_contiguous())
            stage_into(reader, m, dir, h, h.rows);  // straight into place: one pass over the bytes
          else
            ops::copy_(h.rows, stage(reader, m, dir, h));
        } else {
          s = stage(reader, m, dir, Holding{.key = k, .rows = empty(it->second.shape, it->second.dtype),
                                            .global_shape = it->second.shape});
        }
        out.optimizer[oname][key] = s;
      }
    }
  }
  for (const auto& [key, rec] : m.tensors) {
    const bool optimizer_state = key.rfind("optim/", 0) == 0;
    STRIDER_CHECK(expected.count(key) || (optimizer_state && !opt), kOp, dir, " holds tensor '", key,
                  "' that is not part of this run's ", optimizer_state ? "optimizer" : "model",
                  "; it was saved from a different model");
  }
  if (state.rng && !m.rng.empty()) {
    out.rng = m.rng[static_cast<size_t>(rank % m.world_size)];
    Generator probe;
    probe.set_state(out.rng);  // validates before anything changes
  }
  STRIDER_CHECK(!state.scheduler || m.scheduler_step, kOp, dir, " holds no learning-rate schedule position");
  STRIDER_CHECK(!state.data || m.data, kOp, dir, " holds no data position");
  return out;
}

nn::Module& load_target(nn::Module& given) {
  nn::Module& model = fsdp::whole_model_of(given, "checkpoint load");
  if (auto* ddp = dynamic_cast<fsdp::DistributedDataParallel*>(&model)) return ddp->engine();
  return model;
}

}  // namespace

LoadResult load(const std::string& path, const TrainingState& state, dist::ProcessGroup* pg,
                const LoadOptions& options) {
  autograd::NoGradGuard no_grad;
  STRIDER_CHECK(state.model, kOp, "TrainingState::model is null; a checkpoint loads into a model");
  const int rank = pg ? pg->rank() : 0, world = pg ? pg->size() : 1;
  LoadResult result;
  Staged staged;
  optim::Optimizer* opt = options.optimizer ? state.optimizer : nullptr;
  optim::Optimizer::Snapshot opt_before;
  bool opt_changed = false;
  Json outcome = {{"ok", true}};
  try {
    result.dir = resolve_checkpoint(path);
    result.manifest = read_manifest(result.dir);
    staged = stage_all(result.manifest, result.dir, state, options, rank, world);
    if (opt) {  // load_state validates everything (names, shapes, finiteness, completeness) first
      opt_before = opt->snapshot();
      opt->load_state(staged.optimizer, result.manifest.optimizer_steps, result.dir, staged.optimizer_param_steps);
      opt_changed = true;
    }
    // The same checkpoint is the same manifest (copies of it on each host's own storage, as
    // in-memory snapshots keep them, are one checkpoint); messages name the paths.
    io::Sha256 digest;
    digest.update(format_manifest(result.manifest));
    outcome["id"] = digest.hex_digest();
    outcome["where"] = result.dir + " step " + std::to_string(result.manifest.step);
  } catch (const std::exception& e) {
    outcome = {{"ok", false}, {"error", e.what()}};
  }
  // Every rank commits, or none does.
  const std::string mine = outcome.dump(-1, ' ', false, Json::error_handler_t::replace);
  const auto all = pg ? dist::all_gather_strings(*pg, "checkpoint load: each rank's outcome", mine)
                      : std::vector<std::string>{mine};
  std::string failure;
  std::string first_id, first_where;
  for (size_t r = 0; r < all.size() && failure.empty(); ++r) {
    const Json j = Json::parse(all[r], nullptr, false);
    if (!j.is_object() || !j.value("ok", false)) {
      failure = "rank " + std::to_string(r) + ": " + (j.is_object() ? j.value("error", std::string("?")) : all[r]);
      continue;
    }
    const std::string id = j.value("id", std::string()), where = j.value("where", std::string());
    if (r == 0) first_id = id, first_where = where;
    if (id != first_id)
      failure = "rank " + std::to_string(r) + " loaded " + where + " but rank 0 loaded " + first_where +
                "; every rank must see the same checkpoint (a shared file system, or the same path on each host)";
  }
  if (!failure.empty()) {
    if (opt_changed) opt->restore(opt_before);
    STRIDER_CHECK(false, kOp, "loading '", path, "' failed on ", failure, "; nothing was changed");
  }
  nn::Module& target = load_target(*state.model);
  try {  // names and shapes were checked above, so this does not fail short of a bug
    if (auto* engine = dynamic_cast<fsdp::FullyShardedDataParallel*>(&target)) {
      fsdp::FullyShardedDataParallel::StateDictTypeGuard guard(*engine, {.type = fsdp::StateDictType::Sharded});
      engine->load_state_dict(staged.model);
    } else {
      target.load_state_dict(staged.model);
    }
  } catch (...) {
    if (opt_changed) opt->restore(opt_before);
    throw;
  }
  const Manifest& m = result.manifest;
  if (state.scheduler) state.scheduler->set_last_step(*m.scheduler_step);
  if (state.data) *state.data = *m.data;
  if (state.user) *state.user = m.user;
  if (!staged.rng.empty()) default_generator().set_state(staged.rng);
  return result;
}

}  // namespace strider::checkpoint
