#pragma once
// torch.optim.lr_scheduler.LambdaLR: lr = base * factor(step), one factor function for every
// group or one per group.
#include <functional>
#include <vector>

#include "strider/optim/lr_scheduler.h"

namespace strider::optim {

class LambdaLR : public LRScheduler {
 public:
  using Factor = std::function<double(int64_t step)>;
  LambdaLR(Optimizer& opt, Factor factor);
  // One factor per param group, in order.
  LambdaLR(Optimizer& opt, std::vector<Factor> factors);
  double lr_at(int64_t step, size_t group) const override;

 private:
  std::vector<Factor> factors_;
};

}  // namespace strider::optim
