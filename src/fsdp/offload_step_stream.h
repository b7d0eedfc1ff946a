#pragma once
// The optimizer step over offloaded state as a stream: before each parameter steps, the state of
// the parameters after it is read ahead (up to a byte budget), and after it steps, its moments
// (and its unit's shard, once the unit's last parameter is done) are written back while the next
// one computes. The order is the optimizer's, recorded as block names at each step, so the
// next step's first window can be read during backward without touching the optimizer.
#include <cstdint>
#include <vector>

#include "strider/optim/optimizer.h"

namespace strider::fsdp::detail {

class OffloadTier;

class OffloadStepStream {
 public:
  OffloadStepStream(OffloadTier& tier, int64_t read_ahead_bytes) : tier_(tier), budget_(read_ahead_bytes) {}

  // Called from the optimizer's step pre-hook, its parameter-update hooks and its step post-hook.
  void begin_step();
  void before(const optim::Optimizer& opt, size_t index);
  void after(const optim::Optimizer& opt, size_t index);
  void end_step();
  // Reads the first budget's worth of last step's order (from backward, ahead of the step).
  void read_ahead_first();
  // Whether a step streamed since the last call (its state is already written back).
  bool take_streamed();

 private:
  // Block names (StorageImpl::address) of parameter i's shard and state; empty entries are unknown.
  std::vector<const void*> blocks_of(const optim::Optimizer& opt, size_t index) const;
  void read_ahead(const optim::Optimizer& opt, size_t from);

  OffloadTier& tier_;
  int64_t budget_;
  size_t read_until_ = 0;           // parameters [.., read_until_) of this step are read ahead
  const void* last_read_ = nullptr;  // a shard shared by consecutive parameters is read once
  std::vector<const void*> order_;   // this step's blocks in use order (for the next backward)
  std::vector<const void*> recorded_;
  bool streamed_ = false;
};

}  // namespace strider::fsdp::detail
