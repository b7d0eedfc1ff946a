#include "strider/fsdp/cost_model.h"

#include <algorithm>
#include <deque>

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
// Bytes of one rank's chunk of the gradients on the wire (gradient_codec.h), and of all chunks.
int64_t chunk_bytes(const UnitLayout& u) {
  const int64_t numel = flat(u) ? u.shard_numel : u.full_numel;
  if (numel == 0) return 0;  // a unit without parameters reduces nothing
  const int64_t align = u.replicas;  // exact chunks are padded for the all-reduce across replicas
  return u.exact_gradients ? (2 * numel + 1 + align - 1) / align * align * 8 : numel * u.reduce_bytes;
}
int64_t wire_bytes(const UnitLayout& u) { return (flat(u) ? u.shards : 1) * chunk_bytes(u); }

}  // namespace

MemoryFormula memory_formula(const std::vector<UnitLayout>& units, int optimizer_states, int prefetched) {
  MemoryFormula f;
  int64_t kept = 0;  // gathered in forward and kept until their backward ends
  int64_t running_sums = 0;  // deterministic mode
  std::vector<int64_t> regathered;
  for (const UnitLayout& u : units) {
    const int64_t own = (flat(u) ? u.shard_numel : u.full_numel) * u.param_bytes;
    f.parameters += own;
    f.gradients += own;
    f.optimizer_state += optimizer_states * own;
    const int64_t full = u.full_numel * u.compute_bytes;
    if (flat(u) && persists(u)) f.parameters += full;
    if (gathers(u) && !freed_after_forward(u)) kept += full;
    if (freed_after_forward(u)) regathered.push_back(full);
    // Deterministic mode: between micro-batches a running sum of the reduced chunk stays.
    if (u.exact_gradients && u.micro_batches_per_rank > 1) running_sums += chunk_bytes(u);
  }
  // Prefetch keeps the next units' gathers in flight beside the one computing.
  std::sort(regathered.rbegin(), regathered.rend());
  int64_t ahead = 0;
  for (size_t i = 1; i <= static_cast<size_t>(std::max(prefetched, 0)) && i < regathered.size(); ++i) ahead += regathered[i];
  // Backward runs the units in reverse, the root last. Each unit's backward holds its parameters
  // gathered again (if freed after forward) and the buffer its gradients are packed into for the
  // reduce-scatter, while up to TreeState's kMaxReducesInFlight (2) earlier units' buffers are
  // still being reduced; it frees the parameters it kept from forward; in deterministic mode its
  // reduced chunk stays until backward ends (under NoShard the packed buffer is the gradient itself
  // in normal mode, and that chunk in deterministic mode).
  std::vector<const UnitLayout*> backward_order;
  for (auto it = units.rbegin(); it != units.rend(); ++it)
    if (!it->is_root) backward_order.push_back(&*it);
  for (const UnitLayout& u : units)
    if (u.is_root) backward_order.push_back(&u);
  int64_t kept_left = kept, chunks_done = 0, held = 0;
  std::deque<int64_t> in_flight;
  for (const UnitLayout* u : backward_order) {
    if (!flat(*u)) {
      if (u->exact_gradients) chunks_done += chunk_bytes(*u) - u->full_numel * u->param_bytes;
      continue;
    }
    const int64_t full = u->full_numel * u->compute_bytes, buffer = wire_bytes(*u);
    int64_t now = kept_left + chunks_done + (freed_after_forward(*u) ? full : 0) + buffer;
    for (int64_t b : in_flight) now += b;
    held = std::max(held, now);
    in_flight.push_back(buffer);
    if (in_flight.size() > 2) in_flight.pop_front();
    if (gathers(*u) && !freed_after_forward(*u)) kept_left -= full;
    if (u->exact_gradients) chunks_done += chunk_bytes(*u) - u->shard_numel * u->param_bytes;
  }
  held = std::max({held, kept, chunks_done});
  f.working = held + ahead + running_sums;
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
    // Deterministic mode reduces once per micro-batch.
    const int64_t rounds = u.exact_gradients ? u.micro_batches_per_rank : 1;
    const int64_t full = u.full_numel * u.compute_bytes, grads = rounds * wire_bytes(u),
                  shard_grads = rounds * chunk_bytes(u);
    if (!flat(u)) {  // NoShard: one all-reduce of the gradients among the replicas
      total += 2 * grads * (r - 1) / r;
      continue;
    }
    const int64_t gathers_per_step = persists(u) ? 1 : (freed_after_forward(u) ? 2 : 1) * rounds;  // per forward
    total += gathers_per_step * full * (s - 1) / s;  // all-gathers of the parameters
    total += grads * (s - 1) / s;                    // reduce-scatter of the gradients
    total += 2 * shard_grads * (r - 1) / r;          // hybrid: all-reduce of the shard across replicas
  }
  return total;
}

int64_t bytes_sent_per_step(const FullyShardedDataParallel& model) { return bytes_sent_per_step(model.unit_layouts()); }

}  // namespace strider::fsdp
