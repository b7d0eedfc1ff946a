#pragma once
// An optimizer applied during backward (FullyShardedDataParallel::register_optimizer with
// in_backward): as soon as a unit's gradients are reduced, its parameters step and the gradients
// are dropped, while the units before it still compute their backward (PyTorch's
// _apply_optimizer_in_backward; ZeRO-Infinity overlaps the optimizer with backward the same
// way). The first unit to step in a backward begins the optimizer's step, the end of backward
// ends it, so step counts, hooks and learning rates are those of an ordinary step.
#include <unordered_map>
#include <vector>

#include "strider/optim/optimizer.h"

namespace strider::fsdp::detail {

class FlatParamUnit;

class OptimizerInBackward {
 public:
  // `units_of_params[i]` is the unit holding the optimizer's parameter i.
  OptimizerInBackward(optim::Optimizer& optimizer, const std::vector<const FlatParamUnit*>& units_of_params);
  // Gives the updates back to the optimizer's own step() (the model is gone).
  ~OptimizerInBackward();
  OptimizerInBackward(const OptimizerInBackward&) = delete;
  OptimizerInBackward& operator=(const OptimizerInBackward&) = delete;
  // The unit's gradients are final: update those of its parameters that have one, then drop them.
  void update(const FlatParamUnit& unit);
  // The end of a backward: ends the step if one began.
  void end_backward();
  // Storage addresses of the optimizer state of `unit`'s parameters (none before their first step).
  std::vector<const void*> state_blocks(const FlatParamUnit& unit) const;

 private:
  optim::Optimizer& live_optimizer() const;

  optim::Optimizer& optimizer_;
  std::weak_ptr<const void> alive_;
  std::unordered_map<const FlatParamUnit*, std::vector<size_t>> indices_;  // each unit's optimizer indices
  bool stepping_ = false;
};

}  // namespace strider::fsdp::detail
