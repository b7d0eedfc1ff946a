#pragma once
// Learning-rate schedules: call step() once per epoch (StepLR) or per iteration (warmup cosine).
#include "strider/optim/optimizer.h"

namespace strider::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& opt) : opt_(opt), base_lr_(opt.lr()) {}
  virtual ~LRScheduler() = default;
  void step() {
    ++epoch_;
    opt_.set_lr(lr_at(epoch_));
  }
  virtual double lr_at(int64_t step) const = 0;
  int64_t last_step() const { return epoch_; }
  // Resumes at `step` (a checkpoint's): the optimizer's lr becomes lr_at(step).
  void set_last_step(int64_t step) {
    epoch_ = step;
    opt_.set_lr(step > 0 ? lr_at(step) : base_lr_);
  }

 protected:
  Optimizer& opt_;
  double base_lr_;
  int64_t epoch_ = 0;
};

// lr = base * gamma^(floor(step / step_size)).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& opt, int64_t step_size, double gamma = 0.1);
  double lr_at(int64_t step) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// Linear warmup from 0 over `warmup` steps, then cosine decay to min_lr at `total` steps.
class CosineWithWarmup : public LRScheduler {
 public:
  CosineWithWarmup(Optimizer& opt, int64_t warmup, int64_t total, double min_lr = 0.0);
  double lr_at(int64_t step) const override;

 private:
  int64_t warmup_, total_;
  double min_lr_;
};

}  // namespace strider::optim
