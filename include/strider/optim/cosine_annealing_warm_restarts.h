#pragma once
// torch.optim.lr_scheduler.CosineAnnealingWarmRestarts (SGDR, PyTorch 1.13): cosine annealing
// from the base lr to eta_min over a cycle of T_i steps, then a restart at the base lr; the
// first cycle has T_0 steps and each next one T_mult times the last:
//   lr = eta_min + (base - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2
// with T_cur the steps since the last restart. Not chainable (PyTorch computes it from the base).
// Call step() once per batch (PyTorch's fractional step(epoch) is not offered). T_0 >= 1,
// T_mult >= 1, eta_min >= 0 (the same for every group).
#include <cstdint>
#include <utility>

#include "strider/optim/lr_scheduler.h"

namespace strider::optim {

class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& opt, int64_t T_0, int64_t T_mult = 1, double eta_min = 0.0);
  double lr_at(int64_t step, size_t group) const override;
  // (T_cur, T_i) at `step`: the steps into the cycle and the cycle's length.
  std::pair<int64_t, int64_t> cycle_at(int64_t step) const;

 private:
  int64_t t_0_, t_mult_;
  double eta_min_;
};

}  // namespace strider::optim
