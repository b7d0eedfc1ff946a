#include "strider/optim/lr_scheduler.h"

#include <cmath>
#include <numbers>

#include "strider/core/error.h"

namespace strider::optim {

StepLR::StepLR(Optimizer& opt, int64_t step_size, double gamma) : LRScheduler(opt), step_size_(step_size), gamma_(gamma) {
  STRIDER_CHECK(step_size > 0, "StepLR", "step_size must be positive, got ", step_size);
}

double StepLR::lr_at(int64_t step) const {
  return base_lr_ * std::pow(gamma_, static_cast<double>(step / step_size_));
}

CosineWithWarmup::CosineWithWarmup(Optimizer& opt, int64_t warmup, int64_t total, double min_lr)
    : LRScheduler(opt), warmup_(warmup), total_(total), min_lr_(min_lr) {
  STRIDER_CHECK(warmup >= 0 && total > warmup, "CosineWithWarmup", "need 0 <= warmup < total, got warmup ", warmup,
                " total ", total);
  opt.set_lr(lr_at(0));
}

double CosineWithWarmup::lr_at(int64_t step) const {
  if (step < warmup_) return base_lr_ * static_cast<double>(step + 1) / static_cast<double>(warmup_);
  const double t = std::min(1.0, static_cast<double>(step - warmup_) / static_cast<double>(total_ - warmup_));
  return min_lr_ + 0.5 * (base_lr_ - min_lr_) * (1.0 + std::cos(std::numbers::pi * t));
}

}  // namespace strider::optim
