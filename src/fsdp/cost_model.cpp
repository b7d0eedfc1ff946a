#include "strider/fsdp/cost_model.h"

#include <algorithm>
#include <deque>

#include "fsdp/tree_state.h"
#include "strider/fsdp/fully_sharded_data_parallel.h"

namespace strider::fsdp {
namespace {

bool flat(const UnitLayout& u) { return u.flat_shards; }
bool persists(const UnitLayout& u) { return u.full_params_persist; }
bool freed_after_forward(const UnitLayout& u) { return !u.is_root && u.free_after_forward; }
// Gathered before forward (and, if freed after it, again before backward).
bool gathers(const UnitLayout& u) { return flat(u) && !persists(u); }
// gradient_codec.h's buffers. The wire: what a unit's gradients are packed into, every rank's
// chunk (deterministic mode: float32, replicated parameters padded to a multiple of the replicas).
int64_t wire_bytes(const UnitLayout& u) {
  if (!u.exact_gradients) return u.layout.full_numel() * u.reduce_bytes;
  if (flat(u)) return u.layout.full_numel() * 4;
  return (u.layout.full_numel() + u.replicas - 1) / u.replicas * u.replicas * 4;
}
// The reduced chunk this rank keeps: the reduce dtype's, or in deterministic mode integer limbs
// (two per element and one count, flat chunks padded to a multiple of the replicas) unless one
// micro-batch per rank with nothing to add across replicas lets it be the float32 mean.
int64_t chunk_bytes(const UnitLayout& u) {
  const int64_t numel = flat(u) ? u.layout.shard_numel() : u.layout.full_numel();
  if (numel == 0) return 0;  // a unit without parameters reduces nothing
  if (!u.exact_gradients) return numel * u.reduce_bytes;
  const int64_t block = flat(u) ? numel : (numel + u.replicas - 1) / u.replicas;
  // (Replicated, the all-gather of the whole float gradient starts as soon as the block is in.)
  if (u.micro_batches_per_rank == 1 && (!flat(u) || u.replicas == 1)) return flat(u) ? block * 4 : wire_bytes(u);
  if (!flat(u)) return (2 * block + 1) * 8;
  return (2 * numel + 1 + u.replicas - 1) / u.replicas * u.replicas * 8;
}
// Autograd makes each parameter's gradient as a tensor of its own, then adds it into the unit's
// gradient buffer: the largest one is alive beside that buffer.
int64_t largest_gradient_bytes(const UnitLayout& u) {
  int64_t largest = 0;
  for (size_t i = 0; i < u.layout.size(); ++i) largest = std::max(largest, u.layout[i].numel());
  return largest * u.compute_bytes;
}
// Bytes a unit's reduction holds while in flight: the wire, and (deterministic mode, more than one
// rank reducing) every rank's contribution to this rank's chunk as it arrives.
int64_t in_flight_bytes(const UnitLayout& u) {
  const int reducers = flat(u) ? u.layout.ranks() : u.replicas;
  return wire_bytes(u) * (u.exact_gradients && reducers > 1 ? 2 : 1);
}

int64_t own_bytes(const UnitLayout& u) { return (flat(u) ? u.layout.shard_numel() : u.layout.full_numel()) * u.param_bytes; }
int64_t state_bytes(const UnitLayout& u, const OptimizerFootprint& o) {
  return o.states * (flat(u) ? u.layout.shard_numel() : u.layout.full_numel()) * (o.state_bytes ? o.state_bytes : u.param_bytes);
}

// Backward runs the units in reverse, the root last.
std::vector<const UnitLayout*> backward_order(const std::vector<UnitLayout>& units) {
  std::vector<const UnitLayout*> order;
  for (auto it = units.rbegin(); it != units.rend(); ++it)
    if (!it->is_root) order.push_back(&*it);
  for (const UnitLayout& u : units)
    if (u.is_root) order.push_back(&u);
  return order;
}

// CPUOffload: the most of the flat units' shards and optimizer state in memory at once, and the
// most reduced gradients waiting for the step beside them (flat_param_unit.cpp decides both).
// With the optimizer in backward: unit i's gather comes with the next `prefetched` units'
// gathers (their shards and state were read ahead before); read_ahead_shards then reads unit
// i's own state and the units after those, whole, while fewer than read_ahead_bytes are on
// their way. A unit's shard and state stay until its step, which comes as soon as its
// reduction is done (offloaded, TreeState settles each reduction at once): the peak is that
// step, with its reduced gradient. Without it, the shards gathered in backward stay for the step
// streamed after it (OffloadStepStream), which starts with all of them, the first unit's state
// and what it reads ahead; the gradients are all kept (memory_formula counts them). Above these
// are the pages in transit: a stepped unit's, queued for the writer (up to write_behind_bytes)
// and then kept as spares (up to read_ahead_bytes) until the next read takes them. Each step
// sends one unit out as the reads bring one in, so about one unit's pages are in transit: the
// formula counts the largest unit's (within both bounds). A disk that falls behind the reads
// can hold up to both bounds at once: that much more at worst.
struct OffloadPeak {
  int64_t tier = 0, gradients = 0;
};
OffloadPeak offload_peak(const std::vector<UnitLayout>& units, const OptimizerFootprint& o, const OffloadBudget& b,
                         int prefetched) {
  std::vector<const UnitLayout*> order;
  for (const UnitLayout* u : backward_order(units))
    if (flat(*u)) order.push_back(u);
  if (order.empty()) return {};
  const auto whole = [&](size_t i) { return own_bytes(*order[i]) + state_bytes(*order[i], o); };
  int64_t largest = 0;
  for (size_t i = 0; i < order.size(); ++i) largest = std::max(largest, whole(i));
  OffloadPeak peak;
  if (!o.in_backward) {
    int64_t largest_state = 0;
    for (const UnitLayout* u : order) {
      peak.tier += own_bytes(*u);
      largest_state = std::max(largest_state, state_bytes(*u, o));
    }
    peak.tier += largest_state + b.read_ahead_bytes;
  }
  for (size_t i = 0; o.in_backward && i < order.size(); ++i) {
    size_t j = i + 1;
    int64_t ahead = 0;  // the prefetched units, then what read_ahead_shards reads
    for (; j < order.size() && j <= i + static_cast<size_t>(std::max(prefetched, 0)); ++j) ahead += whole(j);
    for (int64_t asked = state_bytes(*order[i], o); j < order.size() && asked < b.read_ahead_bytes; ++j) {
      asked += whole(j);
      ahead += whole(j);
    }
    peak.tier = std::max(peak.tier, whole(i) + ahead);
    // The reduced chunk, decoded into the parameters' dtype when it was reduced in another.
    const UnitLayout& u = *order[i];
    const int64_t decoded = u.reduce_bytes == u.param_bytes ? 0 : u.param_bytes;
    peak.gradients = std::max(peak.gradients, u.layout.shard_numel() * (u.reduce_bytes + decoded));
  }
  peak.tier += std::min(largest, b.write_behind_bytes + b.read_ahead_bytes);
  return peak;
}

}  // namespace

OptimizerFootprint optimizer_footprint(const optim::Optimizer& optimizer, bool in_backward) {
  // Every optimizer has a parameter (its constructors check). A state dtype of its own (not the
  // parameters') is one for all; otherwise each unit's parameter bytes count.
  const Tensor& first = optimizer.params().at(0).second;
  const ScalarType state = optimizer.state_dtype(first);
  return {static_cast<int>(optimizer.state_keys(0).size()),
          state == first.dtype() ? 0 : static_cast<int64_t>(element_size(state)), in_backward};
}

MemoryFormula memory_formula(const std::vector<UnitLayout>& units, OptimizerFootprint optimizer, int prefetched,
                             int snapshot_copies, OffloadBudget offload) {
  MemoryFormula f;
  int64_t kept = 0;  // gathered in forward and kept until their backward ends
  int64_t running_sums = 0;  // deterministic mode
  bool exact = false;
  std::vector<int64_t> regathered;
  for (const UnitLayout& u : units) {
    const int64_t own = own_bytes(u), state = state_bytes(u, optimizer);
    if (offload.enabled && flat(u)) {
      f.offloaded += own + state;
    } else {
      f.parameters += own;
      f.optimizer_state += state;
    }
    if (!optimizer.in_backward) f.gradients += own;
    f.memory_snapshots += snapshot_copies * (own + state) / std::max(u.replicas, 1);
    const int64_t full = u.layout.full_numel() * u.compute_bytes;
    if (flat(u) && persists(u)) f.parameters += full;
    if (gathers(u) && !freed_after_forward(u)) kept += full;
    if (freed_after_forward(u)) regathered.push_back(full);
    // Deterministic mode: between micro-batches a running sum of the reduced chunk stays.
    if (u.exact_gradients && u.micro_batches_per_rank > 1) running_sums += chunk_bytes(u);
    exact = exact || u.exact_gradients;
  }
  // Prefetch keeps the next units' gathers in flight beside the one computing.
  std::sort(regathered.rbegin(), regathered.rend());
  int64_t ahead = 0;
  for (size_t i = 1; i <= static_cast<size_t>(std::max(prefetched, 0)) && i < regathered.size(); ++i) ahead += regathered[i];
  // Backward runs the units in reverse, the root last. Each unit's backward holds its parameters
  // gathered again (if freed after forward) and the buffers of its reduction, while up to
  // TreeState's kMaxReducesInFlight (2; offloaded with the optimizer in backward, none) earlier
  // units' reductions are still in flight, and
  // autograd's gradient of one parameter before it is added into the buffer; it frees
  // the parameters it kept from forward; in deterministic mode its reduced chunk stays until
  // backward ends. NoShard in normal mode all-reduces the gradient itself, in place.
  int64_t kept_left = kept, chunks_done = 0, held = 0;
  std::deque<int64_t> in_flight;
  for (const UnitLayout* u : backward_order(units)) {
    if (!flat(*u) && !u->exact_gradients) continue;  // reduces the gradient itself, in place
    const int64_t full = u->layout.full_numel() * u->compute_bytes, buffer = in_flight_bytes(*u);
    int64_t now = kept_left + chunks_done + (freed_after_forward(*u) ? full : 0) + buffer + largest_gradient_bytes(*u);
    for (int64_t b : in_flight) now += b;
    held = std::max(held, now);
    in_flight.push_back(buffer);
    if (in_flight.size() > (offload.enabled && optimizer.in_backward ? detail::TreeState::kMaxReducesInFlightSteppingOffloaded
                                                                      : detail::TreeState::kMaxReducesInFlight))
      in_flight.pop_front();
    if (gathers(*u) && !freed_after_forward(*u)) kept_left -= full;
    if (u->exact_gradients) chunks_done += chunk_bytes(*u);
  }
  held = std::max({held, kept, chunks_done});
  if (!exact) {
    f.working = held + ahead;
  } else {
    // Deterministic mode makes the gradients only after the last micro-batch's backward, from
    // the limbs (which then go): last step's gradients live through the first forward at most,
    // beside the parameters it keeps, and during backward none is alive.
    f.working = std::max(kept + f.gradients, held + running_sums) + ahead - f.gradients;
  }
  if (offload.enabled) {
    const OffloadPeak peak = offload_peak(units, optimizer, offload, prefetched);
    f.offload_resident = peak.tier;
    f.gradients += peak.gradients;
  }
  return f;
}

MemoryFormula memory_formula(const FullyShardedDataParallel& model, OptimizerFootprint optimizer, int snapshot_copies) {
  const FSDPOptions& o = model.options();
  const bool prefetches = o.backward_prefetch != BackwardPrefetch::None || o.forward_prefetch;
  const int prefetched = prefetches ? o.limit_all_gathers : 0;
  const OffloadBudget offload{.enabled = o.cpu_offload.offload_params,
                              .read_ahead_bytes = o.cpu_offload.read_ahead_bytes,
                              .write_behind_bytes = o.cpu_offload.write_behind_bytes};
  return memory_formula(model.unit_layouts(), optimizer, prefetched, snapshot_copies, offload);
}

namespace {

// What one rank sends per step for a unit: in its shard group while forward computes (the
// gathers before forward; ShardOptimizer's gather after the step, which the next forward needs)
// and while backward computes (re-gathers, gradient reductions), and in its replica group (the
// reductions, in backward).
struct UnitTraffic {
  int64_t shard_forward = 0, shard_backward = 0, replica = 0;
  int64_t shard_regather = 0;  // the part of shard_backward that gathers again (the rest reduces)
  // With each reduction, the all-reduce over the world of which parameters a backward reached
  // (FlatParamUnit::launch_reached: a float32 per parameter).
  int64_t reached = 0;
  int64_t total() const { return shard_forward + shard_backward + replica + reached; }
};

UnitTraffic unit_traffic(const UnitLayout& u) {
  const int s = u.layout.ranks(), r = u.replicas;
  // Deterministic mode reduces once per micro-batch.
  const int64_t rounds = u.exact_gradients ? u.micro_batches_per_rank : 1;
  const int64_t full = u.layout.full_numel() * u.compute_bytes, grads = rounds * wire_bytes(u),
                shard_grads = rounds * chunk_bytes(u);
  UnitTraffic t;
  const int64_t world = static_cast<int64_t>(s) * r, mask = 4 * static_cast<int64_t>(u.layout.params().size());
  t.reached = rounds * (2 * mask * (world - 1) / world);
  // NoShard: one all-reduce of the gradients among the replicas (deterministic mode: its
  // all-to-all and all-gather halves, the same bytes).
  if (!flat(u)) {
    // Deterministic mode gathers the float result once per step, after the last micro-batch.
    t.replica = (u.exact_gradients ? grads + wire_bytes(u) : 2 * grads) * (r - 1) / r;
    return t;
  }
  const int64_t gather = full * (s - 1) / s;                 // one all-gather of the parameters
  t.shard_forward = (persists(u) ? 1 : rounds) * gather;
  t.shard_regather = (freed_after_forward(u) ? rounds : 0) * gather;  // gathered again for backward
  t.shard_backward = t.shard_regather + grads * (s - 1) / s;  // reduce-scatter (deterministic: all-to-all)
  t.replica = 2 * shard_grads * (r - 1) / r;  // hybrid: all-reduce of the shard across replicas
  return t;
}

// The share of a unit's traffic no computation hides when it is the root (gathered first, reduced
// last): its first gather and its reductions; a re-gather would overlap (the root has none).
UnitTraffic unhidden_part(const UnitLayout& u) {
  UnitTraffic t = unit_traffic(u);
  if (flat(u)) {
    const int s = u.layout.ranks();
    t.shard_forward = std::min(t.shard_forward, u.layout.full_numel() * u.compute_bytes * (s - 1) / s);
    t.shard_backward -= (freed_after_forward(u) ? (u.exact_gradients ? u.micro_batches_per_rank : 1) : 0) *
                        (u.layout.full_numel() * u.compute_bytes * (s - 1) / s);
  }
  return t;
}

// Ring edges (member -> next member) that leave `host`: the rings of every group of this kind
// that has members there. Ranks sit ranks_per_host to a host; the shard groups are blocks of `s`
// consecutive ranks, the replica groups every s-th rank.
int64_t edges_leaving(int host, int world, int s, int ranks_per_host, bool replica_groups) {
  int64_t edges = 0;
  for (int q = host * ranks_per_host; q < (host + 1) * ranks_per_host && q < world; ++q) {
    const int next = replica_groups ? (q + s) % world : q - q % s + (q % s + 1) % s;
    if (next / ranks_per_host != host) ++edges;
  }
  return edges;
}

}  // namespace

int64_t bytes_sent_per_step(const std::vector<UnitLayout>& units) {
  int64_t total = 0;
  for (const UnitLayout& u : units) total += unit_traffic(u).total();
  return total;
}

namespace {

// What `t` puts on the links leaving `host` for unit `u`, by phase.
LinkTraffic leaving(const UnitLayout& u, const UnitTraffic& t, int ranks_per_host, int host) {
  STRIDER_CHECK(!u.exact_gradients, "link_traffic_per_step", "unit '", u.name,
                "' reduces exactly (deterministic mode), whose all-to-all is not a ring; the link model "
                "covers normal mode");
  const int s = u.layout.ranks(), world = s * u.replicas;
  STRIDER_CHECK(ranks_per_host > 0 && world % ranks_per_host == 0 && host >= 0 && host < world / ranks_per_host,
                "link_traffic_per_step", "host ", host, " with ", ranks_per_host,
                " ranks per host does not fit the world of ", world, " ranks");
  const int64_t shard_edges = edges_leaving(host, world, s, ranks_per_host, false),
                replica_edges = edges_leaving(host, world, s, ranks_per_host, true),
                world_edges = edges_leaving(host, world, world, ranks_per_host, false);
  return {t.shard_forward * shard_edges,
          t.shard_backward * shard_edges + t.replica * replica_edges + t.reached * world_edges, 0, 0};
}

}  // namespace

LinkTraffic link_traffic_per_step(const std::vector<UnitLayout>& units, int ranks_per_host, int host) {
  LinkTraffic total;
  for (const UnitLayout& u : units) {
    const LinkTraffic l = leaving(u, unit_traffic(u), ranks_per_host, host);
    total.forward += l.forward;
    total.backward += l.backward;
  }
  if (units.empty()) return total;
  auto root = std::find_if(units.begin(), units.end(), [](const UnitLayout& u) { return u.is_root; });
  const UnitLayout& first = root != units.end() ? *root : units.front();
  const LinkTraffic unhidden = leaving(first, unhidden_part(first), ranks_per_host, host);
  total.unhidden_forward = unhidden.forward;
  total.unhidden_backward = unhidden.backward;
  return total;
}

std::vector<UnitLinkBytes> link_bytes_per_unit(const std::vector<UnitLayout>& units, int ranks_per_host, int host) {
  std::vector<UnitLinkBytes> out;
  for (const UnitLayout& u : units) {
    const UnitTraffic t = unit_traffic(u);
    // Each kind of collective on its own, through the same edge count as its group's.
    UnitTraffic gather, regather, reduce, replica;
    gather.shard_forward = t.shard_forward;
    regather.shard_backward = t.shard_regather;
    reduce.shard_backward = t.shard_backward - t.shard_regather;
    reduce.reached = t.reached;  // launched with the reduction
    replica.replica = t.replica;
    out.push_back({.name = u.name,
                   .is_root = u.is_root,
                   .elements = u.layout.full_numel(),
                   .gather = leaving(u, gather, ranks_per_host, host).forward,
                   .regather = leaving(u, regather, ranks_per_host, host).backward,
                   .reduce = leaving(u, reduce, ranks_per_host, host).backward,
                   .replica = leaving(u, replica, ranks_per_host, host).backward});
  }
  return out;
}

int64_t bytes_leaving_host_per_step(const std::vector<UnitLayout>& units, int ranks_per_host, int host) {
  return link_traffic_per_step(units, ranks_per_host, host).total();
}

int64_t bytes_sent_per_step(const FullyShardedDataParallel& model) { return bytes_sent_per_step(model.unit_layouts()); }

}  // namespace strider::fsdp
