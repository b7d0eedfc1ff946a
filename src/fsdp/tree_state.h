#pragma once
// What the units of one FSDP tree share: the process group, the groups plans draw from, the
// options, the order units ran forward in (for prefetching), gradient-accumulation mode and
// the offload tier.
#include <deque>
#include <memory>
#include <vector>

#include "fsdp/sharding_plan.h"
#include "strider/core/allocator.h"
#include "strider/dist/process_group.h"
#include "strider/fsdp/options.h"
#include "strider/fsdp/stats.h"

namespace strider::fsdp::detail {

class FlatParamUnit;
class OffloadTier;
class OffloadStepStream;
class OptimizerInBackward;

struct TreeState {
  std::shared_ptr<dist::ProcessGroup> pg;
  std::shared_ptr<PlanGroups> groups;
  FSDPOptions options;
  std::vector<FlatParamUnit*> units;          // construction order (the same on every rank)
  std::vector<FlatParamUnit*> forward_order;  // first iteration's forward order
  bool order_recorded = false;
  FlatParamUnit* root = nullptr;
  bool no_sync = false;
  bool callback_queued = false;     // a backward is under way (its final callback is queued)
  int backwards_since_step = 0;      // deterministic mode checks each step has all micro-batches
  int prefetched = 0;                // units gathered ahead of use
  // Units whose gradient reduction is launched and not yet settled: each holds its gradient
  // buffers, so backward settles the oldest beyond max_reduces_in_flight() (without a gather in
  // backward, as under ShardOptimizer, nothing else would keep it from holding them all).
  // Offloaded with the optimizer in backward, each reduction is settled as soon as it is
  // launched: the unit then steps and its shard and state leave memory, and no gradient wire is
  // alive during the next unit's backward. That is two units less in memory for the reduction's
  // time on the compute thread, which the disk's reads (going on meanwhile) usually exceed.
  // fsdp::memory_formula counts the same.
  static constexpr size_t kMaxReducesInFlight = 2, kMaxReducesInFlightSteppingOffloaded = 0;
  size_t max_reduces_in_flight() const {
    return tier && optimizer_in_backward ? kMaxReducesInFlightSteppingOffloaded : kMaxReducesInFlight;
  }
  std::deque<FlatParamUnit*> reduces_in_flight;
  OffloadTier* tier = nullptr;  // offload files; null without offload
  double write_wait_at_reset = 0;  // the tier's write waits (process-wide) when this tree's stats were reset
  // The optimizer step over the offload files, once an optimizer is registered.
  std::shared_ptr<OffloadStepStream> step_stream;
  // The optimizer that steps each unit as its gradients are reduced, if registered so.
  std::shared_ptr<OptimizerInBackward> optimizer_in_backward;
  FSDPStats stats;

  Allocator& shard_allocator();
  ScalarType compute_dtype(ScalarType param) const {
    return options.mixed_precision && options.mixed_precision->param_dtype ? *options.mixed_precision->param_dtype
                                                                           : param;
  }
  ScalarType reduce_dtype(ScalarType param) const {
    if (options.mixed_precision && options.mixed_precision->reduce_dtype) return *options.mixed_precision->reduce_dtype;
    return compute_dtype(param);
  }
};

}  // namespace strider::fsdp::detail
