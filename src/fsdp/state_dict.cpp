// FSDP's state-dict types (full, sharded, local): what state_dict() returns and what
// load_state_dict() takes, following PyTorch's FullyShardedDataParallel.state_dict_type.
#include <algorithm>
#include <exception>
#include <optional>
#include <set>

#include "fsdp/flat_param_unit.h"
#include "strider/autograd/grad_mode.h"
#include "strider/dist/consistency.h"
#include "strider/fsdp/fully_sharded_data_parallel.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"

namespace strider::fsdp {

using detail::FlatParamUnit;
using detail::ParamSlot;

namespace {

constexpr const char* kOp = "FullyShardedDataParallel::load_state_dict";

std::string shape(const Tensor& t) { return t.defined() ? strider::detail::str(t.sizes()) : std::string("undefined"); }


// One planned copy of a load: checked before any runs, so a load is all or nothing.
struct Copy {
  Tensor dst, src;
};

// The copy that puts this rank's rows [offset, offset + rows) of `s` from `src`, a sharded entry
// whose row range the entry kShardEntryPrefix + name gives (marked used); none when it holds no rows.
std::optional<Copy> copy_from_sharded_entry(const std::map<std::string, Tensor>& state, const ParamSlot& s,
                                            IntArrayRef sizes, const Tensor& src, int64_t offset, int64_t rows, int rank,
                                            std::set<std::string>& used) {
  const std::string meta_name = nn::kShardEntryPrefix + s.full_name;
  auto meta = state.find(meta_name);
  STRIDER_CHECK(meta != state.end(), kOp, "sharded entry '", s.full_name, "' has no '", meta_name,
                "' giving its row range");
  used.insert(meta_name);
  const Tensor m = meta->second.defined() && meta->second.dtype() == kLong ? meta->second.contiguous() : Tensor();
  STRIDER_CHECK(m.defined() && m.numel() == 2, kOp, "'", meta_name,
                "' must be an int64 tensor [row_offset, global_rows], got ", shape(meta->second));
  const int64_t from = m.data_ptr<int64_t>()[0], global_rows = m.data_ptr<int64_t>()[1];
  DimVector whole = src.sizes().vec();
  if (!whole.empty()) whole[0] = global_rows;
  STRIDER_CHECK(src.dim() >= 1 && IntArrayRef(whole) == sizes, kOp, "sharded entry '", s.full_name,
                "' is part of a tensor of shape ", IntArrayRef(whole), " but the model's is ", sizes);
  STRIDER_CHECK(from >= 0 && from <= global_rows - src.sizes()[0], kOp, "sharded entry '", s.full_name, "' holds ",
                src.sizes()[0], " rows from row ", from, ", past the ", global_rows, " rows of the whole tensor");
  STRIDER_CHECK(rows == 0 || (from <= offset && offset + rows <= from + src.sizes()[0]), kOp, "sharded entry '",
                s.full_name, "' holds rows [", from, ", ", from + src.sizes()[0], ") but rank ", rank,
                " needs rows [", offset, ", ", offset + rows,
                ") in this layout; load a sharded dict written for this layout, or a full one");
  if (rows == 0) return std::nullopt;
  return Copy{s.shard.narrow(0, 0, rows), src.narrow(0, offset - from, rows)};
}

}  // namespace

std::map<std::string, Tensor> FullyShardedDataParallel::state_dict() const {
  auto* self = const_cast<FullyShardedDataParallel*>(this);  // gathering changes no observable state
  if (state_dict_config_.type == StateDictType::Full) return self->gather_state_dict(state_dict_config_.rank0_only);
  return shard_state_dict(state_dict_config_.type, state_dict_config_.offload_to_cpu);
}

std::map<std::string, Tensor> FullyShardedDataParallel::full_state_dict() { return gather_state_dict(false); }

std::map<std::string, Tensor> FullyShardedDataParallel::gather_state_dict(bool rank0_only) {
  autograd::NoGradGuard no_grad;
  const bool keep = !rank0_only || pg_->rank() == 0;
  std::map<std::string, Tensor> out;
  // Unit by unit: at most one unit's parameters are gathered at a time.
  for (FlatParamUnit* u : tree_->units) {
    if (u->compute_dtype() != u->dtype()) {
      // Mixed precision gathers compute-dtype casts: the dict takes the masters, gathered alone.
      for (size_t i = 0; i < u->params().size(); ++i) {
        const ParamSlot& s = u->params()[i];
        Tensor whole = u->gather_full(i, s.shard);
        if (keep) out[s.full_name] = whole.contiguous(s.format);
      }
    } else {
      const bool was_gathered = u->is_gathered();
      u->use_full_params();
      if (keep)
        for (auto& s : u->params()) out[s.full_name] = s.full.to(s.shard.dtype(), MemoryFormat::Preserve, true).detach();
      u->use_shards();
      if (!was_gathered) u->reshard();
    }
    // A tied parameter under each of its names, one tensor, as a plain module's state dict has it.
    if (keep)
      for (auto& s : u->params())
        for (auto& a : s.aliases) out[a.full_name] = out[s.full_name];
  }
  if (keep)
    for (auto& [name, b] : named_persistent_buffers(false)) out[name] = b.clone();
  return out;
}

std::map<std::string, Tensor> FullyShardedDataParallel::shard_state_dict(StateDictType type, bool copy) const {
  std::map<std::string, Tensor> out;
  auto take = [copy](const Tensor& t) { return copy ? t.clone() : t.detach(); };
  for (FlatParamUnit* u : tree_->units)
    for (size_t i = 0; i < u->params().size(); ++i) {
      const ParamSlot& s = u->params()[i];
      if (type == StateDictType::Local) {
        out[s.full_name] = take(s.shard);
        continue;
      }
      const RowRange own = u->own_rows(i);
      out[s.full_name] = take(s.shard.narrow(0, 0, own.size()));
      out[nn::kShardEntryPrefix + s.full_name] = tensor(std::vector<int64_t>{own.begin, u->layout()[i].rows});
    }
  for (auto& [name, b] : named_persistent_buffers(false)) out[name] = take(b);
  nn::mark_state_dict(out, {type, pg_->rank(), pg_->size()});
  return out;
}

std::vector<ParameterShard> FullyShardedDataParallel::parameter_shards() const {
  std::vector<ParameterShard> out;
  for (FlatParamUnit* u : tree_->units)
    for (size_t i = 0; i < u->params().size(); ++i) {
      const ParamSlot& s = u->params()[i];
      const RowRange own = u->own_rows(i);
      ParameterShard p{.name = s.full_name, .unit = u->name(), .padded = s.shard, .rows = s.shard.narrow(0, 0, own.size()),
                       .global_sizes = u->layout()[i].sizes, .row_offset = own.begin};
      if (u->plan().replica_group) {
        p.replica_rank = u->plan().replica_group->rank();
        p.replicas = u->plan().replica_group->size();
      }
      out.push_back(std::move(p));
    }
  return out;
}

nn::IncompatibleKeys FullyShardedDataParallel::load_state_dict(const std::map<std::string, Tensor>& state,
                                                               bool strict) {
  return load_state(state, state_dict_config_.type, strict);
}

void FullyShardedDataParallel::load_full_state_dict(const std::map<std::string, Tensor>& state) {
  load_state(state, StateDictType::Full, /*strict=*/true);
}

nn::IncompatibleKeys FullyShardedDataParallel::load_state(const std::map<std::string, Tensor>& state,
                                                          StateDictType type, bool strict) {
  autograd::NoGradGuard no_grad;
  // Plan every copy and check it on every rank before the first one runs anywhere: a rank that
  // failed alone would leave the others' shards loaded (half a model).
  std::vector<Copy> copies;
  nn::IncompatibleKeys keys;
  std::string error;
  std::exception_ptr failure;
  // This rank's copies (destination rows, source rows), each checked; strict raises here too.
  auto plan = [&]() -> nn::IncompatibleKeys {
    const nn::StateDictOrigin origin = nn::state_dict_origin(state);
    STRIDER_CHECK(origin.kind == type, kOp, "got ", nn::describe(origin), " but the model's state-dict type is ",
                  nn::to_string(type), "; set_state_dict_type({.type = StateDictType::",
                  origin.kind == StateDictType::Full ? "Full" : origin.kind == StateDictType::Sharded ? "Sharded" : "Local",
                  "}) before loading it");
    if (type == StateDictType::Local)
      STRIDER_CHECK(origin.world == pg_->size() && origin.rank == pg_->rank(), kOp, "got ", nn::describe(origin),
                    " on rank ", pg_->rank(), " of ", pg_->size(),
                    ": a local state dict loads only into the rank and world size that wrote it; use a sharded or "
                    "full state dict to change them");

    std::set<std::string> used;
    std::vector<std::string> missing, unexpected;
    auto entry = [&](const std::string& name) -> const Tensor* {
      auto it = state.find(name);
      if (it == state.end()) {
        missing.push_back(name);
        return nullptr;
      }
      used.insert(name);
      STRIDER_CHECK(it->second.defined(), kOp, "entry '", name, "' is an undefined tensor");
      return &it->second;
    };
    for (FlatParamUnit* u : tree_->units)
      for (size_t i = 0; i < u->params().size(); ++i) {
        const ParamSlot& s = u->params()[i];
        const Tensor* src = entry(s.full_name);
        // A full dict may name a tied parameter under its other names too (a plain module's
        // does; an export holds the first only): taken if there, one copy loads it.
        for (auto& a : s.aliases)
          if (type == StateDictType::Full && state.count(a.full_name)) used.insert(a.full_name);
        if (!src) continue;
        const DimVector& sizes = u->layout()[i].sizes;
        const int64_t offset = u->own_rows(i).begin, rows = u->own_rows(i).size();
        if (type == StateDictType::Local) {
          STRIDER_CHECK(src->sizes() == s.shard.sizes(), kOp, "local shard '", s.full_name, "' has shape ", src->sizes(),
                        " but this rank's shard is ", s.shard.sizes());
          copies.push_back({s.shard, *src});
        } else if (type == StateDictType::Full) {
          STRIDER_CHECK(src->sizes() == IntArrayRef(sizes), kOp, "parameter '", s.full_name, "' has shape ",
                        src->sizes(), " in the state dict but ", IntArrayRef(sizes), " in the model");
          if (rows > 0) copies.push_back({s.shard.narrow(0, 0, rows), src->narrow(0, offset, rows)});
        } else if (auto c = copy_from_sharded_entry(state, s, sizes, *src, offset, rows, pg_->rank(), used)) {
          copies.push_back(*c);
        }
      }
    for (auto& [name, b] : named_persistent_buffers(false)) {
      const Tensor* src = entry(name);
      if (!src) continue;
      STRIDER_CHECK(src->sizes() == b.sizes(), kOp, "buffer '", name, "' has shape ", src->sizes(),
                    " in the state dict but ", b.sizes(), " in the model");
      copies.push_back({b, *src});
    }
    for (auto& [name, t] : state)
      if (!used.count(name) && name != nn::kStateDictMarker) unexpected.push_back(name);
    return nn::report_incompatible_keys(
        kOp, "FullyShardedDataParallel(" + module_->type_name() + ") from " + nn::describe(origin), std::move(missing),
        std::move(unexpected), strict);
  };
  try {
    keys = plan();
  } catch (const std::exception& e) {
    error = e.what();
    failure = std::current_exception();
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure && error.empty()) error = "an exception that is not a std::exception";
  if (pg_->size() == 1 && failure) std::rethrow_exception(failure);
  const std::vector<std::string> outcomes =
      dist::all_gather_strings(*pg_, "load_state_dict: each rank's outcome", error);
  std::string failed;  // every failing rank's reason, without the op's prefix repeated
  const std::string prefix = std::string("[") + kOp + "] ";
  for (size_t r = 0; r < outcomes.size(); ++r) {
    if (outcomes[r].empty()) continue;
    const bool prefixed = outcomes[r].rfind(prefix, 0) == 0;
    failed += (failed.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + ": " +
              outcomes[r].substr(prefixed ? prefix.size() : 0);
  }
  STRIDER_CHECK(failed.empty(), kOp, "no rank changed its parameters, because not every rank could load its part (",
                pg_->size(), " ranks): ", failed);
  for (auto& c : copies) {
    ops::copy_(c.dst, c.src);
    c.dst.storage()->bump_version();  // a backward saved before the load must not use it
  }
  for (FlatParamUnit* u : tree_->units) u->mark_shards_loaded();
  return keys;
}

}  // namespace strider::fsdp
