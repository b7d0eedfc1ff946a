#include "strider/optim/chainable_lr.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "strider/core/error.h"

// Every expression below is PyTorch 1.13's (torch/optim/lr_scheduler.py) in the same order of
// operations, and this file is built with -ffp-contract=off: Python rounds each operation, so a
// fused multiply-add or a reordering would move the lrs by an ulp.

namespace strider::optim {
namespace {

constexpr double kPi = std::numbers::pi;

void check_gamma(const char* op, double gamma) {
  STRIDER_CHECK(std::isfinite(gamma) && gamma > 0, op, "gamma must be a positive number, got ", gamma,
                "; the lr is multiplied by it (0.1 divides it by 10, a gamma <= 0 makes it 0 or negative)");
}

void check_total_iters(const char* op, int64_t total_iters) {
  STRIDER_CHECK(total_iters >= 1, op, "total_iters must be >= 1, got ", total_iters,
                " (PyTorch divides by it); it is the number of steps the schedule takes to reach its end");
}

}  // namespace

MultiStepLR::MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(opt), milestones_(std::move(milestones)), gamma_(gamma) {
  check_gamma("MultiStepLR", gamma);
  for (size_t i = 0; i < milestones_.size(); ++i) {
    STRIDER_CHECK(milestones_[i] >= 0, "MultiStepLR", "milestone ", i, " is ", milestones_[i],
                  "; milestones are steps, >= 0");
    STRIDER_CHECK(i == 0 || milestones_[i] > milestones_[i - 1], "MultiStepLR", "milestones must be increasing, got ",
                  milestones_[i - 1], " then ", milestones_[i], " (milestones ", i - 1, " and ", i,
                  "); list each step once, in increasing order, and pass gamma^2 for a double decay");
  }
  initial_step();
}

double MultiStepLR::lr_at(int64_t step, size_t group) const {
  // bisect_right: the milestones <= step.
  const auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), step) - milestones_.begin();
  return base_lrs_.at(group) * std::pow(gamma_, static_cast<double>(passed));
}

double MultiStepLR::next_lr(int64_t step, size_t, double current) const {
  // PyTorch: lr * gamma ** milestones[step], the count being 1 (milestones are distinct).
  return std::binary_search(milestones_.begin(), milestones_.end(), step) ? current * std::pow(gamma_, 1.0) : current;
}

ExponentialLR::ExponentialLR(Optimizer& opt, double gamma) : LRScheduler(opt), gamma_(gamma) {
  check_gamma("ExponentialLR", gamma);
  initial_step();
}

double ExponentialLR::lr_at(int64_t step, size_t group) const {
  return base_lrs_.at(group) * std::pow(gamma_, static_cast<double>(step));
}

double ExponentialLR::next_lr(int64_t step, size_t, double current) const {
  return step == 0 ? current : current * gamma_;
}

ConstantLR::ConstantLR(Optimizer& opt, ConstantLROptions o) : LRScheduler(opt), o_(o) {
  // PyTorch allows factor 0 and then divides by it at total_iters.
  STRIDER_CHECK(o.factor > 0 && o.factor <= 1, "ConstantLR", "factor must be in (0, 1], got ", o.factor,
                "; the lr is base * factor until total_iters (a factor of 1 leaves it unchanged)");
  // PyTorch's total_iters 0 keeps base * factor for ever (its closed form says base).
  check_total_iters("ConstantLR", o.total_iters);
  initial_step();
}

double ConstantLR::lr_at(int64_t step, size_t group) const {
  return base_lrs_.at(group) * (o_.factor + (step >= o_.total_iters ? 1.0 : 0.0) * (1 - o_.factor));
}

double ConstantLR::next_lr(int64_t step, size_t, double current) const {
  if (step == 0) return current * o_.factor;
  if (step != o_.total_iters) return current;
  return current * (1.0 / o_.factor);
}

LinearLR::LinearLR(Optimizer& opt, LinearLROptions o) : LRScheduler(opt), o_(o) {
  // PyTorch 1.13 allows start_factor 0 and then divides by zero at step 1 (later versions refuse it).
  STRIDER_CHECK(o.start_factor > 0 && o.start_factor <= 1, "LinearLR", "start_factor must be in (0, 1], got ",
                o.start_factor, "; the first step's lr is base * start_factor (use a small positive one, 1e-3, to "
                "start near 0)");
  STRIDER_CHECK(o.end_factor >= 0 && o.end_factor <= 1, "LinearLR", "end_factor must be in [0, 1], got ",
                o.end_factor, "; the lr ends at base * end_factor");
  check_total_iters("LinearLR", o.total_iters);
  initial_step();
}

double LinearLR::lr_at(int64_t step, size_t group) const {
  const double total = static_cast<double>(o_.total_iters);
  return base_lrs_.at(group) *
         (o_.start_factor +
          (o_.end_factor - o_.start_factor) * static_cast<double>(std::min(o_.total_iters, step)) / total);
}

double LinearLR::next_lr(int64_t step, size_t, double current) const {
  if (step == 0) return current * o_.start_factor;
  if (step > o_.total_iters) return current;
  const double change = o_.end_factor - o_.start_factor;
  return current * (1.0 + change / (static_cast<double>(o_.total_iters) * o_.start_factor +
                                    static_cast<double>(step - 1) * change));
}

PolynomialLR::PolynomialLR(Optimizer& opt, PolynomialLROptions o) : LRScheduler(opt), o_(o) {
  check_total_iters("PolynomialLR", o.total_iters);
  // A negative power divides by zero at total_iters (PyTorch: ZeroDivisionError then).
  STRIDER_CHECK(std::isfinite(o.power) && o.power >= 0, "PolynomialLR", "power must be >= 0, got ", o.power,
                "; 1 decays linearly to 0, 2 quadratically");
  initial_step();
}

double PolynomialLR::lr_at(int64_t step, size_t group) const {
  const double total = static_cast<double>(o_.total_iters);
  return base_lrs_.at(group) * std::pow(1.0 - static_cast<double>(std::min(o_.total_iters, step)) / total, o_.power);
}

double PolynomialLR::next_lr(int64_t step, size_t, double current) const {
  if (step == 0 || step > o_.total_iters) return current;
  const double total = static_cast<double>(o_.total_iters);
  const double decay = std::pow((1.0 - static_cast<double>(step) / total) / (1.0 - static_cast<double>(step - 1) / total),
                                o_.power);
  return current * decay;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& opt, int64_t T_max, double eta_min)
    : LRScheduler(opt), t_max_(T_max), eta_min_(eta_min) {
  STRIDER_CHECK(T_max >= 1, "CosineAnnealingLR", "T_max must be >= 1, got ", T_max,
                " (PyTorch divides by it); it is the number of steps from the base lr down to eta_min");
  STRIDER_CHECK(std::isfinite(eta_min) && eta_min >= 0, "CosineAnnealingLR", "eta_min must be >= 0, got ", eta_min,
                "; it is the lowest lr, reached at step T_max");
  initial_step();
}

double CosineAnnealingLR::lr_at(int64_t step, size_t group) const {
  return eta_min_ + (base_lrs_.at(group) - eta_min_) *
                        (1 + std::cos(kPi * static_cast<double>(step) / static_cast<double>(t_max_))) / 2;
}

double CosineAnnealingLR::next_lr(int64_t step, size_t group, double current) const {
  if (step == 0) return current;
  const double t_max = static_cast<double>(t_max_);
  // At the bottom of a period the ratio below would divide by 1 + cos(pi) = 0.
  if ((step - 1 - t_max_) % (2 * t_max_) == 0)
    return current + (base_lrs_.at(group) - eta_min_) * (1 - std::cos(kPi / t_max)) / 2;
  return (1 + std::cos(kPi * static_cast<double>(step) / t_max)) /
             (1 + std::cos(kPi * static_cast<double>(step - 1) / t_max)) * (current - eta_min_) +
         eta_min_;
}

}  // namespace strider::optim
