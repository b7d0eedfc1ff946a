#pragma once
// ShardingPlan: what a sharding strategy means for one unit, decided once when the unit is made.
// The unit asks its plan where parameters live and how gradients travel instead of branching
// on the strategy; adding a strategy means adding a row to kRows in sharding_plan.cpp.
//
//   strategy           between steps       forward / backward          gradients             after the step
//   NoShard (DDP)      the module's own    nothing to gather           all-reduce (world)    -
//   ShardOptimizer     full + shard        full params persist         reduce-scatter        all-gather shards
//   ShardGradOp        shard               gather once, free at end    reduce-scatter        -
//   FullShard          shard               gather, free, gather again  reduce-scatter        -
//   HybridShard        shard in group      as FullShard, in group      RS in group + AR      -
//   HybridShardGradOp  shard in group      as ShardGradOp, in group    RS in group + AR      -
//
// (RS = reduce-scatter among the shard group, AR = all-reduce among the replica group: the
// ranks holding the same shard.) docs/fsdp_strategies.md has bytes per parameter and traffic.
#include <memory>
#include <string>

#include "strider/dist/mesh.h"
#include "strider/dist/process_group.h"
#include "strider/fsdp/options.h"

namespace strider::fsdp::detail {

// The groups plans draw from: the world, and (made on first use, shared by every unit of the
// tree) the shards x replicas layout of hybrid sharding.
class PlanGroups {
 public:
  PlanGroups(std::shared_ptr<dist::ProcessGroup> world, int shard_group_size, dist::ShardReplicaGroups hybrid);
  const std::shared_ptr<dist::ProcessGroup>& world() const { return world_; }
  // Collective over the world the first time it is called (every rank reaches it together,
  // since every rank builds the same units).
  const dist::ShardReplicaGroups& hybrid();
  // The hybrid groups if some plan made (or was given) them; empty otherwise.
  const dist::ShardReplicaGroups& made_hybrid() const { return hybrid_; }

 private:
  std::shared_ptr<dist::ProcessGroup> world_;
  int shard_group_size_;
  dist::ShardReplicaGroups hybrid_;
};

struct ShardingPlan {
  ShardingStrategy strategy;
  // Parameters are split across these ranks (null: not split, the module keeps its tensors).
  std::shared_ptr<dist::ProcessGroup> shard_group;
  // Ranks holding the same shard, whose gradients are averaged by an all-reduce (null: none).
  std::shared_ptr<dist::ProcessGroup> replica_group;
  // Full parameters persist between steps (nothing gathered before forward or backward).
  bool full_params_persist = false;
  // Non-root units free the full parameters after forward and gather them again for backward.
  bool free_after_forward = false;

  int shards() const { return shard_group ? shard_group->size() : 1; }
  int shard_rank() const { return shard_group ? shard_group->rank() : 0; }
  int replicas() const { return replica_group ? replica_group->size() : 1; }
  // Registered parameters are this rank's shards in one flat buffer.
  bool flat_shards() const { return shard_group != nullptr; }
  // Full parameters are gathered before use and freed after.
  bool gathers_on_demand() const { return flat_shards() && !full_params_persist; }
  // Updated shards are all-gathered into the persistent full parameters after the step.
  bool gathers_after_step() const { return flat_shards() && full_params_persist; }
};

ShardingPlan make_plan(ShardingStrategy strategy, PlanGroups& groups);

}  // namespace strider::fsdp::detail
