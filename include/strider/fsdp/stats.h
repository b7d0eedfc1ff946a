#pragma once
// What one FSDP tree moved and waited for since the last reset: the benchmarks report these so
// copies into and out of the flat buffers, and communication not hidden by prefetch, are
// measured rather than guessed.
#include <cstdint>

namespace strider::fsdp {

struct FSDPStats {
  int64_t all_gathers = 0, reduce_scatters = 0;
  // All-gathers started ahead of use (forward_prefetch, BackwardPrefetch::BackwardPre): with
  // both on, every gather of a step but the root's first in forward.
  int64_t prefetched_gathers = 0;
  int64_t most_prefetched = 0;  // the most units gathered ahead of use at once (limit_all_gathers bounds it)
  int64_t gathered_bytes = 0;        // unsharded bytes received by all-gathers
  int64_t reduced_bytes = 0;         // gradient bytes entering reduce-scatters (or all-reduces)
  // Hybrid strategies: all-reduces of reduced chunks across the replicas, each launched as soon
  // as its unit's reduction in the shard group is done (during backward, while later units compute).
  int64_t replica_all_reduces = 0;
  // FSDP's flat-buffer copies on the compute thread: casts, packing gradients into the wire when
  // they cannot accumulate in the unit's gradient buffer, and a unit's first gradient of a
  // backward copied into that buffer (the autograd engine copies or adds the others there).
  int64_t copied_bytes = 0;
  double copy_seconds = 0;           // time those copies took
  double gather_wait_seconds = 0;    // compute thread blocked on all-gathers (not hidden by prefetch)
  double reduce_wait_seconds = 0;    // end of backward blocked on reduce-scatters
  // CPUOffload: the most memory the offload tier held at once (blocks in memory, queued writes,
  // spare pages), a process-wide figure shared by every model offloading to that directory.
  int64_t offload_peak_held_bytes = 0;
  // CPUOffload: time spent waiting for the disk because CPUOffload::write_behind_bytes of state
  // were still to be written (the same process-wide scope).
  double offload_write_wait_seconds = 0;
};

}  // namespace strider::fsdp
