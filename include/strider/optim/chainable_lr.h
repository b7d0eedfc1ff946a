#pragma once
// The chainable schedules of torch.optim.lr_scheduler (PyTorch 1.13): each step() scales every
// group's current lr (next_lr, PyTorch's get_lr()), so they compose with another scheduler
// (ChainedScheduler, optim/composed_lr.h) or an lr set by hand, as StepLR does. The lrs are
// PyTorch's bit for bit: next_lr is its recursive form, operation for operation, which PyTorch
// uses by default and which differs from the closed form (lr_at, PyTorch's step(epoch)) in the
// last bits; set_last_step replays the recursive form (optim/lr_scheduler.h). Arguments PyTorch
// would accept but that break the schedule (a division by zero at some step, a negative or NaN
// lr) are refused at construction with an Error naming the scheduler, the value and the fix.
#include <cstdint>
#include <vector>

#include "strider/optim/lr_scheduler.h"

namespace strider::optim {

// MultiStepLR: the lr is multiplied by gamma at each milestone (strictly increasing steps >= 0);
// closed form base * gamma^(number of milestones <= step). gamma > 0.
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma = 0.1);
  double lr_at(int64_t step, size_t group) const override;
  double next_lr(int64_t step, size_t group, double current) const override;
  bool chainable() const override { return true; }

 private:
  std::vector<int64_t> milestones_;
  double gamma_;
};

// ExponentialLR: the lr is multiplied by gamma every step; closed form base * gamma^step. gamma > 0.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& opt, double gamma);
  double lr_at(int64_t step, size_t group) const override;
  double next_lr(int64_t step, size_t group, double current) const override;
  bool chainable() const override { return true; }

 private:
  double gamma_;
};

struct ConstantLROptions {
  double factor = 1.0 / 3;   // in (0, 1]
  int64_t total_iters = 5;   // >= 1
};

// ConstantLR: the lr is base * factor for steps [0, total_iters), then base (step() divides by
// factor at total_iters).
class ConstantLR : public LRScheduler {
 public:
  ConstantLR(Optimizer& opt, ConstantLROptions options = {});
  double lr_at(int64_t step, size_t group) const override;
  double next_lr(int64_t step, size_t group, double current) const override;
  bool chainable() const override { return true; }

 private:
  ConstantLROptions o_;
};

struct LinearLROptions {
  double start_factor = 1.0 / 3;  // in (0, 1]
  double end_factor = 1.0;        // in [0, 1]
  int64_t total_iters = 5;        // >= 1
};

// LinearLR: the factor on the base lr moves linearly from start_factor at step 0 to end_factor
// at total_iters, and stays there; closed form base * (start + (end - start) * min(step, total) / total).
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& opt, LinearLROptions options = {});
  double lr_at(int64_t step, size_t group) const override;
  double next_lr(int64_t step, size_t group, double current) const override;
  bool chainable() const override { return true; }

 private:
  LinearLROptions o_;
};

struct PolynomialLROptions {
  int64_t total_iters = 5;  // >= 1
  double power = 1.0;       // >= 0
};

// PolynomialLR (new in PyTorch 1.13): lr = base * (1 - min(step, total_iters) / total_iters)^power,
// 0 from total_iters on.
class PolynomialLR : public LRScheduler {
 public:
  PolynomialLR(Optimizer& opt, PolynomialLROptions options = {});
  double lr_at(int64_t step, size_t group) const override;
  double next_lr(int64_t step, size_t group, double current) const override;
  bool chainable() const override { return true; }

 private:
  PolynomialLROptions o_;
};

// CosineAnnealingLR: closed form eta_min + (base - eta_min) * (1 + cos(pi * step / T_max)) / 2,
// which keeps going past T_max (back up to base at 2 T_max, a period of 2 T_max) as PyTorch's
// does. step() uses PyTorch 1.13's recursive form (the ratio of consecutive cosines applied to
// the current lr, and at the bottom of each period the increment
// (base - eta_min) * (1 - cos(pi / T_max)) / 2), whose lrs differ from the closed form's in the
// last bits; those are the ones matched. T_max >= 1, eta_min >= 0 (the same for every group).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& opt, int64_t T_max, double eta_min = 0.0);
  double lr_at(int64_t step, size_t group) const override;
  double next_lr(int64_t step, size_t group, double current) const override;
  bool chainable() const override { return true; }

 private:
  int64_t t_max_;
  double eta_min_;
};

}  // namespace strider::optim
