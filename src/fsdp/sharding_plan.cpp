#include "fsdp/sharding_plan.h"

#include <array>

#include "strider/fsdp/cost_model.h"

namespace strider::fsdp {
namespace {

// Which ranks a plan's shard or replica group spans.
enum class Span { None, World, HybridShard, HybridReplica };

struct PlanRow {
  ShardingStrategy strategy;
  const char* name;
  Span shards, replicas;
  bool full_params_persist, free_after_forward;
};

constexpr auto kRows = std::to_array<PlanRow>({
    {ShardingStrategy::NoShard, "no_shard", Span::None, Span::World, true, false},
    {ShardingStrategy::ShardOptimizer, "shard_optimizer", Span::World, Span::None, true, false},
    {ShardingStrategy::ShardGradOp, "shard_grad_op", Span::World, Span::None, false, false},
    {ShardingStrategy::FullShard, "full_shard", Span::World, Span::None, false, true},
    {ShardingStrategy::HybridShard, "hybrid_shard", Span::HybridShard, Span::HybridReplica, false, true},
    {ShardingStrategy::HybridShardGradOp, "hybrid_shard_grad_op", Span::HybridShard, Span::HybridReplica, false, false},
});

const PlanRow& row_of(ShardingStrategy s) {
  for (const PlanRow& r : kRows)
    if (r.strategy == s) return r;
  STRIDER_CHECK(false, "FullyShardedDataParallel", "unknown sharding strategy ", static_cast<int>(s));
  return kRows[0];
}

}  // namespace

std::string to_string(ShardingStrategy s) { return row_of(s).name; }

ShardingStrategy parse_sharding_strategy(const std::string& name) {
  std::string names;
  for (const PlanRow& r : kRows) {
    if (name == r.name) return r.strategy;
    names += std::string(names.empty() ? "" : ", ") + r.name;
  }
  STRIDER_CHECK(false, "sharding strategy", "unknown strategy '", name, "'; use one of ", names);
  return ShardingStrategy::FullShard;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const PlanRow& r : kRows) names.emplace_back(r.name);
  return names;
}

UnitLayout planned_unit_layout(ShardingStrategy strategy, const std::vector<DimVector>& shapes, int world,
                               int shard_group_size, bool is_root, int64_t compute_bytes, int64_t reduce_bytes) {
  const PlanRow& row = row_of(strategy);
  const bool hybrid = row.shards == Span::HybridShard;
  STRIDER_CHECK(world > 0 && (!hybrid || (shard_group_size > 0 && world % shard_group_size == 0)),
                "planned_unit_layout", "a world of ", world, " ranks with shard groups of ", shard_group_size);
  auto ranks = [&](Span span) {
    switch (span) {
      case Span::None: return 1;
      case Span::World: return world;
      case Span::HybridShard: return shard_group_size;
      case Span::HybridReplica: return world / shard_group_size;
    }
    return 1;
  };
  UnitLayout u;
  u.name = is_root ? "root" : "unit";
  u.strategy = strategy;
  u.flat_shards = row.shards != Span::None;
  u.full_params_persist = row.full_params_persist;
  u.free_after_forward = row.free_after_forward;
  u.layout = FlatLayout(shapes, ranks(row.shards));
  u.replicas = u.flat_shards ? ranks(row.replicas) : world;
  u.param_bytes = 4;
  u.compute_bytes = u.flat_shards ? compute_bytes : 4;  // NoShard computes with the module's tensors
  u.reduce_bytes = reduce_bytes;
  u.is_root = is_root;
  return u;
}

namespace detail {

PlanGroups::PlanGroups(std::shared_ptr<dist::ProcessGroup> world, int shard_group_size,
                       dist::ShardReplicaGroups hybrid)
    : world_(std::move(world)), shard_group_size_(shard_group_size), hybrid_(std::move(hybrid)) {}

const dist::ShardReplicaGroups& PlanGroups::hybrid() {
  if (!hybrid_.shard)
    hybrid_ = shard_group_size_ > 0 ? dist::make_shard_replica_groups(*world_, shard_group_size_)
                                    : dist::make_host_shard_replica_groups(*world_);
  return hybrid_;
}

ShardingPlan make_plan(ShardingStrategy strategy, PlanGroups& groups) {
  const PlanRow& row = row_of(strategy);
  auto group = [&](Span span) -> std::shared_ptr<dist::ProcessGroup> {
    switch (span) {
      case Span::None: return nullptr;
      case Span::World: return groups.world();
      case Span::HybridShard: return groups.hybrid().shard;
      case Span::HybridReplica: return groups.hybrid().replica;
    }
    return nullptr;
  };
  ShardingPlan plan;
  plan.strategy = strategy;
  plan.shard_group = group(row.shards);
  plan.replica_group = group(row.replicas);
  if (plan.replica_group && plan.replica_group->size() == 1) plan.replica_group = nullptr;  // nobody to average with
  plan.full_params_persist = row.full_params_persist;
  plan.free_after_forward = row.free_after_forward;
  return plan;
}

}  // namespace detail
}  // namespace strider::fsdp
