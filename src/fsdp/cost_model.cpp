#include "strider/fsdp/cost_model.h"

#include <algorithm>

#include "strider/fsdp/fully_sharded_data_parallel.h"

namespace strider::fsdp {
namespace {

bool flat(const UnitLayout& u) { return u.strategy != ShardingStrategy::NoShard; }
bool persists(const UnitLayout& u) {
  return u.strategy == ShardingStrategy::NoShard || u.strategy == ShardingStrategy::ShardOptimizer;
}
bool freed_after_forward(const UnitLayout& u) {
  return !u.is_root && (u.strategy == ShardingStrategy::FullShard || u.strategy == ShardingStrategy::HybridShard);
}
// Gathered before forward (and, if freed after it, again before backward).
bool gathers(const UnitLayout& u) { return flat(u) && !persists(u); }

}  // namespace

MemoryFormula memory_formula(const std::vector<UnitLayout>& units, int optimizer_states, int prefetched) {
  MemoryFormula f;
  int64_t kept = 0;  // gathered in forward and kept until their backward ends
  std::vector<int64_t> regathered;
  int64_t backward_unit = 0;
  for (const UnitLayout& u : units) {
    const int64_t own = (flat(u) ? u.shard_numel : u.full_numel) * u.param_bytes;
    f.parameters += own;
    f.gradients += own;
    f.optimizer_state += optimizer_states * own;
    const int64_t full = u.full_numel * u.compute_bytes, grad_buffer = u.full_numel * u.reduce_bytes;
    if (flat(u) && persists(u)) f.parameters += full;
    if (gathers(u) && !freed_after_forward(u)) kept += full;
    if (freed_after_forward(u)) regathered.push_back(full);
    // A unit's backward: its parameters gathered again (if freed) and the buffer its gradients
    // are packed into for the reduce-scatter (under NoShard that buffer is the gradient itself).
    // Up to TreeState's kMaxReducesInFlight (2) earlier units' buffers are still being reduced.
    if (flat(u)) backward_unit = std::max(backward_unit, (freed_after_forward(u) ? full : 0) + 3 * grad_buffer);
  }
  // Prefetch keeps the next units' gathers in flight beside the one computing.
  std::sort(regathered.rbegin(), regathered.rend());
  int64_t ahead = 0;
  for (size_t i = 1; i <= static_cast<size_t>(std::max(prefetched, 0)) && i < regathered.size(); ++i) ahead += regathered[i];
  f.working = kept + backward_unit + ahead;
  return f;
}

MemoryFormula memory_formula(const FullyShardedDataParallel& model, int optimizer_states) {
  const FSDPOptions& o = model.options();
  const int prefetched = o.backward_prefetch == BackwardPrefetch::None ? 0 : o.limit_all_gathers;
  return memory_formula(model.unit_layouts(), optimizer_states, prefetched);
}

int64_t bytes_sent_per_step(const std::vector<UnitLayout>& units) {
  int64_t total = 0;
  for (const UnitLayout& u : units) {
    const int s = u.shards, r = u.replicas;
    const int64_t full = u.full_numel * u.compute_bytes, grads = u.full_numel * u.reduce_bytes;
    const int64_t shard_grads = u.shard_numel * u.reduce_bytes;
    if (!flat(u)) {  // NoShard: one all-reduce of the gradients among the replicas
      total += 2 * grads * (r - 1) / r;
      continue;
    }
    const int gathers_per_step = persists(u) ? 1 : freed_after_forward(u) ? 2 : 1;
    total += gathers_per_step * full * (s - 1) / s;  // all-gathers of the parameters
    total += grads * (s - 1) / s;                    // reduce-scatter of the gradients
    total += 2 * shard_grads * (r - 1) / r;          // hybrid: all-reduce of the shard across replicas
  }
  return total;
}

int64_t bytes_sent_per_step(const FullyShardedDataParallel& model) { return bytes_sent_per_step(model.unit_layouts()); }

}  // namespace strider::fsdp
