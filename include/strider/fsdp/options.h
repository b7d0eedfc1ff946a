#pragma once
// FSDP's options, named as in PyTorch's FullyShardedDataParallel.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "strider/core/scalar_type.h"
#include "strider/dist/mesh.h"
#include "strider/nn/state_dict.h"

namespace strider::nn {
class Module;
}

namespace strider::fsdp {

// One option selects the data-parallel flavour, for a whole run or (unit_strategy) per unit.
// docs/fsdp_strategies.md lists what lives where and what travels for each.
enum class ShardingStrategy {
  FullShard,          // parameters, gradients and optimizer state sharded; gathered per unit (ZeRO-3)
  ShardGradOp,        // full parameters kept from forward until the unit's backward ends (ZeRO-2)
  NoShard,            // replicated, gradients all-reduced (DDP)
  ShardOptimizer,     // full parameters persist; gradients reduce-scattered, optimizer state
                      // sharded, updated shards all-gathered after the step (ZeRO-1)
  HybridShard,        // FullShard inside groups of shard_group_size ranks, replicated across groups
  HybridShardGradOp,  // ShardGradOp inside groups, replicated across groups
};

// "full_shard", "shard_grad_op", "no_shard", "shard_optimizer", "hybrid_shard",
// "hybrid_shard_grad_op", and back (throws Error listing the names).
std::string to_string(ShardingStrategy s);
ShardingStrategy parse_sharding_strategy(const std::string& name);
// Every strategy's name, in the order of the plan's rows (src/fsdp/sharding_plan.cpp): what a
// tool offers as choices, so a new strategy needs no edit there.
std::vector<std::string> strategy_names();

// When a unit issues the all-gather of the next unit to run backward.
enum class BackwardPrefetch {
  None,         // gather each unit when its backward starts
  BackwardPre,  // before computing the current unit's gradients
};

// bfloat16 all-gathers and compute with float32 sharded master parameters, for example
// {.param_dtype = kBFloat16, .reduce_dtype = kFloat}. Unset fields keep the parameter's dtype.
struct MixedPrecision {
  std::optional<ScalarType> param_dtype{}, reduce_dtype{}, buffer_dtype{};
};

// Offload of sharded state: a unit's sharded parameters and optimizer state live in a slower,
// larger tier (here one file in `directory`, written and read with O_DIRECT) and are moved out
// while the unit is inactive; the optimizer step reads each parameter's state back ahead of
// its update and writes it out again as soon as it has stepped.
struct CPUOffload {
  bool offload_params = false;
  std::string directory = "/tmp";
  // How much offloaded state may be read ahead of its use, along the known order: the next
  // units' shards in forward and backward, the next parameters' shards and optimizer state in
  // the optimizer step (with FullyShardedDataParallel::register_optimizer); also how much of
  // the last units' shards stays in memory from forward to backward, and how many bytes of pages
  // released by writes are kept for the next reads. 0: read on touch.
  int64_t read_ahead_bytes = int64_t{512} << 20;
  // The most bytes of state moved out but not yet written to the file: past it, moving more out
  // waits for the disk (FSDPStats::offload_write_wait_seconds), so memory stays bounded when the
  // disk is slower than the steps. 0: each move waits for its write.
  int64_t write_behind_bytes = int64_t{512} << 20;
};

// Decides which modules become FSDP units. Called with recurse = true to ask "look inside this
// module?", and with recurse = false to ask "wrap this module?", where nonwrapped_numel counts
// its parameters not already inside a wrapped descendant (PyTorch's signature). Any callable
// of that signature converts to one. A policy may also carry a check of the whole model that
// the wrap runs first (module_type_auto_wrap_policy: every type it names occurs), so a
// misspelled policy is an Error instead of a model silently left as one unit.
class AutoWrapPolicy {
 public:
  using Decide = std::function<bool(const nn::Module&, bool recurse, int64_t nonwrapped_numel)>;
  using Check = std::function<void(const nn::Module& root)>;
  AutoWrapPolicy() = default;
  AutoWrapPolicy(std::nullptr_t) {}  // no policy, as an empty std::function
  template <class F>
    requires(std::is_invocable_r_v<bool, F, const nn::Module&, bool, int64_t> &&
             !std::is_same_v<std::decay_t<F>, AutoWrapPolicy>)
  AutoWrapPolicy(F decide) : decide_(std::move(decide)) {}
  AutoWrapPolicy(Decide decide, Check check) : decide_(std::move(decide)), check_(std::move(check)) {}
  bool operator()(const nn::Module& m, bool recurse, int64_t nonwrapped_numel) const {
    return decide_(m, recurse, nonwrapped_numel);
  }
  explicit operator bool() const { return static_cast<bool>(decide_); }
  void check(const nn::Module& root) const {
    if (check_) check_(root);
  }

 private:
  Decide decide_;
  Check check_;
};

// The strategy of the unit made for `module` (nullopt: FSDPOptions::sharding_strategy), e.g.
// embeddings NoShard and blocks FullShard. Every rank must answer the same.
using UnitStrategyPolicy = std::function<std::optional<ShardingStrategy>(const nn::Module& module)>;

// PyTorch's state_dict_type: what an FSDP model's state_dict() returns and load_state_dict()
// takes (docs/fsdp_strategies.md, "State dicts").
using StateDictType = nn::StateDictKind;
struct StateDictConfig {
  StateDictType type = StateDictType::Full;
  // Full: ranks other than 0 get an empty dict (every rank still joins the gathers).
  bool rank0_only = false;
  // Sharded and Local: independent copies in ordinary host memory instead of views of the live
  // shards (which change with every step and, under CPUOffload, move to the offload file).
  // Full tensors are always copies.
  bool offload_to_cpu = false;
};

struct FSDPOptions {
  AutoWrapPolicy auto_wrap_policy{};  // empty: one unit (plus any modules wrapped by hand)
  ShardingStrategy sharding_strategy = ShardingStrategy::FullShard;
  UnitStrategyPolicy unit_strategy{};  // empty: every unit uses sharding_strategy
  // Hybrid strategies: ranks per shard group (it must divide the world size). 0: the ranks
  // running on one host, as PyTorch's HYBRID_SHARD does.
  int shard_group_size = 0;
  // Hybrid strategies: the shard and replica groups to use (empty: made by wrap with a
  // collective split; wrap stores them here, and enable_wrap reuses them for every unit).
  dist::ShardReplicaGroups hybrid_groups{};
  std::optional<MixedPrecision> mixed_precision{};
  CPUOffload cpu_offload{};
  BackwardPrefetch backward_prefetch = BackwardPrefetch::BackwardPre;
  bool forward_prefetch = false;
  // At most this many units gathered ahead of use (bounds the memory prefetch costs): forward and
  // backward prefetch start the next N units' gathers. 0 prefetches none; negative is an error.
  int limit_all_gathers = 1;
  // Broadcast rank 0's parameters and buffers before sharding (ranks initialised differently).
  bool sync_module_states = false;
  // Deterministic mode: after every step the parameters and optimizer state are bitwise the
  // same whatever the world size and strategy (docs/fsdp_strategies.md, "Deterministic
  // mode"). Each step's global batch is split into `micro_batches` micro-batches (fixed across
  // runs, a multiple of the world size); each rank runs one forward and backward per
  // micro-batch of its share, with its loss unscaled, and the gradient is the mean over the
  // micro-batches of their gradients, summed exactly. Needs float32 parameters and the same
  // number of threads per rank in the runs compared.
  bool deterministic = false;
  int micro_batches = 0;
};

}  // namespace strider::fsdp
