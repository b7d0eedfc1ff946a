#include "strider/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "strider/core/error.h"

namespace strider::optim {

LRScheduler::LRScheduler(Optimizer& opt) : opt_(opt) {
  for (size_t g = 0; g < opt.num_param_groups(); ++g) {
    if (!opt.initial_lr(g)) opt.set_initial_lr(g, opt.lr(g));  // PyTorch: group.setdefault("initial_lr", lr)
    base_lrs_.push_back(*opt.initial_lr(g));
  }
}

void LRScheduler::step() { advance(last_step_ + 1, /*chained=*/true); }

void LRScheduler::set_last_step(int64_t step) { set_position(step, /*restarted=*/false); }

double LRScheduler::next_lr(int64_t step, size_t group, double) const { return lr_at(step, group); }

void LRScheduler::check_groups(const char* who) const {
  STRIDER_CHECK(base_lrs_.size() == opt_.num_param_groups(), who, "the optimizer has ", opt_.num_param_groups(),
                " param groups but the scheduler was built for ", base_lrs_.size(),
                " (add_param_group after building a scheduler); build the scheduler after adding the groups");
}

void LRScheduler::advance(int64_t step, bool chained) {
  STRIDER_CHECK(step >= 0, "LRScheduler", "the step must be >= 0, got ", step);
  check_groups("LRScheduler");
  apply(step, chained);
  record(step);
}

void LRScheduler::record(int64_t step) {
  last_step_ = step;
  last_lr_.clear();
  for (size_t g = 0; g < opt_.num_param_groups(); ++g) last_lr_.push_back(opt_.lr(g));
}

void LRScheduler::apply(int64_t step, bool chained) {
  std::vector<double> lrs;  // all computed before any is set
  for (size_t g = 0; g < base_lrs_.size(); ++g) lrs.push_back(chained ? next_lr(step, g, opt_.lr(g)) : lr_at(step, g));
  for (size_t g = 0; g < lrs.size(); ++g) opt_.set_lr(g, lrs[g]);
  apply_extras(step);
}

std::vector<double> LRScheduler::replayed_lrs(int64_t step, bool restarted) const {
  std::vector<double> lrs(base_lrs_.size());
  for (size_t g = 0; g < lrs.size(); ++g) {
    if (!chainable()) {
      lrs[g] = lr_at(step, g);
      continue;
    }
    // PyTorch's recursive form step by step: its bits, which the closed form does not give.
    double lr = restarted ? lr_at(0, g) : next_lr(0, g, base_lrs_[g]);
    for (int64_t s = 1; s <= step; ++s) lr = next_lr(s, g, lr);
    lrs[g] = lr;
  }
  return lrs;
}

void LRScheduler::set_position(int64_t step, bool restarted) {
  STRIDER_CHECK(step >= 0, "LRScheduler", "the step must be >= 0, got ", step);
  check_groups("LRScheduler");
  const std::vector<double> lrs = replayed_lrs(step, restarted);
  for (size_t g = 0; g < lrs.size(); ++g) opt_.set_lr(g, lrs[g]);
  apply_extras(step);
  record(step);
}

StepLR::StepLR(Optimizer& opt, int64_t step_size, double gamma) : LRScheduler(opt), step_size_(step_size), gamma_(gamma) {
  STRIDER_CHECK(step_size > 0, "StepLR", "step_size must be positive, got ", step_size,
                "; it is the number of steps between two decays: StepLR(opt, 30, 0.1) for every 30 steps");
  STRIDER_CHECK(std::isfinite(gamma) && gamma > 0, "StepLR", "gamma must be a positive number, got ", gamma,
                "; the lr is multiplied by it every step_size steps (0.1 divides it by 10)");
  initial_step();
}

double StepLR::lr_at(int64_t step, size_t group) const {
  return base_lrs_.at(group) * std::pow(gamma_, static_cast<double>(step / step_size_));
}

double StepLR::next_lr(int64_t step, size_t, double current) const {
  return step == 0 || step % step_size_ != 0 ? current : current * gamma_;
}

CosineWithWarmup::CosineWithWarmup(Optimizer& opt, int64_t warmup, int64_t total, double min_lr)
    : LRScheduler(opt), warmup_(warmup), total_(total), min_lr_(min_lr) {
  STRIDER_CHECK(warmup >= 0 && total > warmup, "CosineWithWarmup", "need 0 <= warmup < total, got warmup ", warmup,
                " total ", total);
  initial_step();
}

double CosineWithWarmup::lr_at(int64_t step, size_t group) const {
  const double base = base_lrs_.at(group);
  if (step < warmup_) return base * static_cast<double>(step + 1) / static_cast<double>(warmup_);
  const double t = std::min(1.0, static_cast<double>(step - warmup_) / static_cast<double>(total_ - warmup_));
  return min_lr_ + 0.5 * (base - min_lr_) * (1.0 + std::cos(std::numbers::pi * t));
}

}  // namespace strider::optim
