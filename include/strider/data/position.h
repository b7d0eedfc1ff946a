#pragma once
// Where a DataLoader is in its data: the epoch in progress and how many samples of that epoch
// have been handed out, counted in GLOBAL samples (over all ranks). With a DistributedSampler of
// W replicas and a per-rank batch of B, one step consumes B * W global samples.
//
// Relation to checkpoint::DataPosition (which counts global batches):
//   batches_done = samples_consumed / global_batch_size, samples_consumed = batches_done * global_batch_size.
#include <cstdint>

namespace strider::data {

struct Position {
  int64_t epoch = 0;
  int64_t samples_consumed = 0;
  bool operator==(const Position&) const = default;
};

}  // namespace strider::data
