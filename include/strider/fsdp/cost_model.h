#pragma once
// What a wrapped model costs each rank per training step, from its units and their plans: the
// one formula tests and benchmarks compare measurements with (allocator counters for memory,
// ProcessGroup::bytes_sent for traffic). docs/fsdp_strategies.md derives each term.
#include <cstdint>
#include <string>
#include <vector>

#include "strider/fsdp/flat_layout.h"
#include "strider/fsdp/options.h"
#include "strider/optim/optimizer.h"

namespace strider::fsdp {

class FullyShardedDataParallel;

// One unit as its plan lays it out on this rank.
struct UnitLayout {
  std::string name;
  ShardingStrategy strategy;  // for naming only: the formula reads the plan's properties below
  // From the unit's sharding plan (src/fsdp/sharding_plan.h), so a new strategy is one plan row.
  bool flat_shards = true;           // parameters split into one flat shard buffer per rank
  bool full_params_persist = false;  // whole parameters kept between steps
  bool free_after_forward = false;   // whole parameters freed after forward (non-root units)
  // Its parameters split over the shard group (layout.ranks() ranks; NoShard: one): this rank's
  // shard elements (padded) and the gathered elements (padded: shard_numel x ranks).
  FlatLayout layout;
  int replicas = 1;                   // ranks holding each shard
  int64_t param_bytes = 4, compute_bytes = 4, reduce_bytes = 4;  // bytes per element
  bool is_root = false;
  // Deterministic mode: gradients travel as two int64 limbs per element plus one int64 per
  // rank's chunk (padded to a multiple of the replicas), each micro-batch gathers and reduces
  // once, each unit keeps its reduced chunk until backward ends, and with several micro-batches
  // per rank a running sum of the same size stays between them.
  bool exact_gradients = false;
  int micro_batches_per_rank = 1;
};

// A unit of parameters of these shapes as `strategy`'s plan would lay it out on `world` ranks
// (hybrid strategies: shard groups of shard_group_size consecutive ranks), without any process
// group: the formulas below for runs that are only planned (bench/cluster_table.cpp). Float32
// parameters; compute_bytes and reduce_bytes as mixed precision would set them.
UnitLayout planned_unit_layout(ShardingStrategy strategy, const std::vector<DimVector>& shapes, int world,
                               int shard_group_size, bool is_root, int64_t compute_bytes, int64_t reduce_bytes);

// CPUOffload's settings as the memory formula reads them (src/fsdp/offload_tier.h moves the
// state; flat_param_unit.cpp decides what is read ahead and when a unit's state goes out).
struct OffloadBudget {
  bool enabled = false;
  int64_t read_ahead_bytes = 0;    // also the spare pages kept for the next reads
  int64_t write_behind_bytes = 0;  // evicted state not yet written
};

struct MemoryFormula {
  int64_t parameters = 0;       // registered shards (or the module's tensors) and persistent full copies
  int64_t gradients = 0;        // gradients kept for the optimizer (none when it steps in backward)
  int64_t optimizer_state = 0;  // its state tensors, each parameter-shaped
  int64_t working = 0;          // gathered parameters and gradient buffers alive at the step's peak
  // CPUOffload: the sharded units' parameters and optimizer state live in the offload file
  // (offloaded: not in parameters, optimizer_state or total()); memory holds the part of them in
  // use or read ahead at the step's peak, and one unit's pages in transit (being written, then
  // spare pages for the next read): offload_resident. A disk slower than the reads can add up
  // to CPUOffload's write_behind_bytes + read_ahead_bytes less that unit. Their reduced
  // gradients count in gradients (with the optimizer in backward: the stepping unit's).
  int64_t offloaded = 0;
  int64_t offload_resident = 0;
  int64_t total() const { return parameters + gradients + optimizer_state + working + offload_resident; }
  // Host memory outside the process, for in-memory snapshots (checkpoint::MemorySnapshotter): this
  // rank's share of every parameter and its optimizer state (each tensor's rows split over all
  // ranks, replicas included) times the copies kept (2: its own and its partner's on another host;
  // 1 on one host), file headers aside. Twice this while a snapshot is being taken.
  int64_t memory_snapshots = 0;
};

// What an optimizer keeps beside each parameter element. From a count alone (2 for Adam/AdamW,
// 1 for SGD with momentum, 0 for plain SGD): state in the parameters' dtype, gradients kept.
struct OptimizerFootprint {
  int states = 2;
  int64_t state_bytes = 0;   // bytes per element of each state tensor; 0: the parameter's
  bool in_backward = false;  // steps each unit during backward: no gradients kept for a step
  OptimizerFootprint(int state_tensors = 2) : states(state_tensors) {}  // NOLINT: a count is a footprint
  OptimizerFootprint(int state_tensors, int64_t bytes, bool steps_in_backward)
      : states(state_tensors), state_bytes(bytes), in_backward(steps_in_backward) {}
};
// `optimizer`'s: its first group's state keys, its state dtype.
OptimizerFootprint optimizer_footprint(const optim::Optimizer& optimizer, bool in_backward);

// Per-rank bytes of one training step (forward, backward, optimizer step), activations and
// inputs excluded. prefetched: units gathered ahead of the one computing (the model's overload
// reads its options); snapshot_copies: 0 without in-memory snapshots.
MemoryFormula memory_formula(const std::vector<UnitLayout>& units, OptimizerFootprint optimizer, int prefetched,
                             int snapshot_copies = 0, OffloadBudget offload = {});
MemoryFormula memory_formula(const FullyShardedDataParallel& model, OptimizerFootprint optimizer,
                             int snapshot_copies = 0);

// Bytes this rank sends per training step, every group included (ring volumes: an all-gather or
// reduce-scatter over n ranks sends (n-1)/n of the full buffer, an all-reduce twice that).
int64_t bytes_sent_per_step(const std::vector<UnitLayout>& units);
int64_t bytes_sent_per_step(const FullyShardedDataParallel& model);

// Bytes the ranks of `host` send to other hosts per training step, with the world placed
// ranks_per_host consecutive ranks per host (dist::HostLayout) and every collective a ring in its
// group's rank order (the shard group: consecutive ranks; the replica group: every
// layout.ranks()-th; normal mode's FSDP and DDP collectives above 256 KiB are rings): a group
// crosses the link once per ring edge whose ends sit on different hosts, carrying what one rank
// sends in that group. Deterministic mode's all-to-all is not a ring: refused with an Error.
// Payload only: the link also carries TCP/IP and MPI headers, acknowledgements and heartbeats.
struct LinkTraffic {
  int64_t forward = 0;   // while forward computes: the gathers before it (and ShardOptimizer's after the step)
  int64_t backward = 0;  // while backward computes: re-gathers and gradient reductions
  // What no computation hides: the root unit's first gather (nothing computes before it) and its
  // reductions (nothing after them); without a root unit (DDP's buckets), the first unit's
  // reduction, which backward reaches last. Parts of forward and backward.
  int64_t unhidden_forward = 0, unhidden_backward = 0;
  int64_t total() const { return forward + backward; }
};
LinkTraffic link_traffic_per_step(const std::vector<UnitLayout>& units, int ranks_per_host, int host);
int64_t bytes_leaving_host_per_step(const std::vector<UnitLayout>& units, int ranks_per_host, int host);

// The same bytes unit by unit and collective by collective (normal mode), for simulating the one
// queue a rank's collectives run in against the units' compute (bench/link_table.py): what
// leaves `host` for the unit's forward gather, its gather again for backward, its gradient
// reduction in the shard group and its all-reduce across replicas (hybrid, DDP).
struct UnitLinkBytes {
  std::string name;
  bool is_root = false;
  int64_t elements = 0;  // its parameters' elements (padded): its share of the step's compute
  int64_t gather = 0, regather = 0, reduce = 0, replica = 0;
};
std::vector<UnitLinkBytes> link_bytes_per_unit(const std::vector<UnitLayout>& units, int ranks_per_host, int host);

}  // namespace strider::fsdp
