#include "fsdp/optimizer_in_backward.h"

#include "strider/core/error.h"

namespace strider::fsdp::detail {

OptimizerInBackward::OptimizerInBackward(optim::Optimizer& optimizer,
                                         const std::vector<const FlatParamUnit*>& units_of_params)
    : optimizer_(optimizer), alive_(optimizer.lifetime()) {
  for (size_t i = 0; i < units_of_params.size(); ++i) indices_[units_of_params[i]].push_back(i);
}

OptimizerInBackward::~OptimizerInBackward() {
  if (!alive_.expired()) optimizer_.set_stepped_by("");
}

optim::Optimizer& OptimizerInBackward::live_optimizer() const {
  STRIDER_CHECK(!alive_.expired(), "FullyShardedDataParallel", "the optimizer registered to step in backward was "
                "destroyed before the model; keep it alive as long as the model trains, or register another one");
  return optimizer_;
}

void OptimizerInBackward::update(const FlatParamUnit& unit) {
  auto it = indices_.find(&unit);
  if (it == indices_.end()) return;  // none of its parameters is this optimizer's
  optim::Optimizer& opt = live_optimizer();
  for (size_t i : it->second) {
    Tensor p = opt.params()[i].second;
    if (!p.grad().defined()) continue;
    if (!stepping_) {
      opt.begin_partial_step();
      stepping_ = true;
    }
    opt.update_parameter(i);
    p.set_grad(Tensor());  // consumed: the next backward starts from none, as after zero_grad
  }
}

void OptimizerInBackward::end_backward() {
  if (!stepping_) return;
  stepping_ = false;
  live_optimizer().end_partial_step();
}

std::vector<const void*> OptimizerInBackward::state_blocks(const FlatParamUnit& unit) const {
  std::vector<const void*> out;
  auto it = indices_.find(&unit);
  if (it == indices_.end() || alive_.expired()) return out;
  const auto& state = optimizer_.state();
  for (size_t i : it->second) {
    auto s = state.find(optimizer_.params()[i].first);
    if (s == state.end()) continue;
    for (const auto& [key, t] : s->second)
      if (t.defined() && t.storage()) out.push_back(t.storage()->address());
  }
  return out;
}

}  // namespace strider::fsdp::detail
