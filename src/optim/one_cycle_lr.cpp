#include "strider/optim/one_cycle_lr.h"

#include <cmath>
#include <numbers>
#include <string>

#include "strider/core/error.h"

namespace strider::optim {
namespace {

// One value for every group, or one per group (PyTorch's _format_param).
std::vector<double> per_group(const std::vector<double>& v, size_t groups, const char* name) {
  STRIDER_CHECK(v.size() == 1 || v.size() == groups, "OneCycleLR", "expected ",
                groups == 1 ? std::string("1 value") : "1 or " + std::to_string(groups) + " values", " for ", name,
                " (one for every param group, or one per group), got ", v.size());
  for (double x : v) STRIDER_CHECK(std::isfinite(x), "OneCycleLR", name, " must be finite, got ", x);
  return v.size() == 1 ? std::vector<double>(groups, v[0]) : v;
}

}  // namespace

OneCycleLR::OneCycleLR(Optimizer& opt, OneCycleLROptions o) : LRScheduler(opt), o_(std::move(o)) {
  const char* op = "OneCycleLR";
  const size_t n = opt.num_param_groups();
  if (o_.total_steps > 0) {
    total_steps_ = o_.total_steps;
  } else {
    STRIDER_CHECK(o_.total_steps == 0 && o_.epochs > 0 && o_.steps_per_epoch > 0, op, "define either total_steps > 0 "
                  "or epochs and steps_per_epoch > 0; got total_steps ", o_.total_steps, ", epochs ", o_.epochs,
                  ", steps_per_epoch ", o_.steps_per_epoch);
    STRIDER_CHECK(!__builtin_mul_overflow(o_.epochs, o_.steps_per_epoch, &total_steps_), op, "epochs ", o_.epochs,
                  " x steps_per_epoch ", o_.steps_per_epoch, " overflows; pass total_steps instead");
  }
  // PyTorch divides by these (ZeroDivisionError for 0); a non-positive or non-finite one would
  // silently make every learning rate inf or NaN.
  STRIDER_CHECK(std::isfinite(o_.div_factor) && o_.div_factor > 0, op, "div_factor must be positive, got ", o_.div_factor);
  STRIDER_CHECK(std::isfinite(o_.final_div_factor) && o_.final_div_factor > 0, op,
                "final_div_factor must be positive, got ", o_.final_div_factor);
  STRIDER_CHECK(o_.pct_start >= 0 && o_.pct_start <= 1, op, "pct_start must be in [0, 1], got ", o_.pct_start);
  STRIDER_CHECK(o_.anneal_strategy == "cos" || o_.anneal_strategy == "linear", op,
                "anneal_strategy must be 'cos' or 'linear', got '", o_.anneal_strategy, "'");
  STRIDER_CHECK(!o_.max_lr.empty(), op, "max_lr is required: {.max_lr = {0.1}} (or one per param group)");
  const double total = static_cast<double>(total_steps_);
  if (o_.three_phase) {
    phases_ = {{o_.pct_start * total - 1, Phase::Initial, Phase::Max, true, false},
               {2 * o_.pct_start * total - 2, Phase::Max, Phase::Initial, false, true},
               {total - 1, Phase::Initial, Phase::Min, true, true}};
  } else {
    phases_ = {{o_.pct_start * total - 1, Phase::Initial, Phase::Max, true, false},
               {total - 1, Phase::Max, Phase::Min, false, true}};
  }
  double start = 0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    // PyTorch divides by the phase's length and fails with ZeroDivisionError when it reaches one of none.
    STRIDER_CHECK(phases_[i].end_step != start, op, "phase ", i + 1, " of ", phases_.size(), " spans no steps (",
                  "total_steps ", total_steps_, ", pct_start ", o_.pct_start, "); change pct_start or total_steps");
    start = phases_[i].end_step;
  }
  const std::vector<double> max_lr = per_group(o_.max_lr, n, "max_lr");
  const std::vector<double> max_m = per_group(o_.max_momentum, n, "max_momentum");
  const std::vector<double> base_m = per_group(o_.base_momentum, n, "base_momentum");
  if (o_.cycle_momentum) {
    const GroupOptions first = opt.param_group_options(0);
    STRIDER_CHECK(first.momentum || first.beta1, op, "cycle_momentum needs an optimizer with momentum (SGD) or beta1 "
                  "(Adam, AdamW); ", opt.name(), " has neither: pass {.cycle_momentum = false}");
    beta1_ = first.beta1.has_value();
  }
  for (size_t g = 0; g < n; ++g) {
    const double initial = max_lr[g] / o_.div_factor;
    groups_.push_back({initial, max_lr[g], initial / o_.final_div_factor, max_m[g], base_m[g]});
    opt.set_initial_lr(g, initial);  // PyTorch overwrites group["initial_lr"] here
    base_lrs_[g] = initial;
  }
  initial_step();
}

std::pair<const OneCycleLR::Phase*, double> OneCycleLR::locate(int64_t step) const {
  STRIDER_CHECK(step <= total_steps_, "OneCycleLR", "tried to step ", step + 1, " times; total_steps is ",
                total_steps_, " (PyTorch refuses too): raise total_steps, or stop stepping the scheduler");
  double start = 0;
  const double s = static_cast<double>(step);
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase& p = phases_[i];
    if (s <= p.end_step || i + 1 == phases_.size()) return {&p, (s - start) / (p.end_step - start)};
    start = p.end_step;
  }
  STRIDER_INTERNAL_ASSERT(false, "OneCycleLR has no phases");
  return {nullptr, 0};
}

double OneCycleLR::anneal(double from, double to, double pct) const {
  if (o_.anneal_strategy == "linear") return (to - from) * pct + from;
  return to + (from - to) / 2.0 * (std::cos(std::numbers::pi * pct) + 1);
}

double OneCycleLR::lr_point(const GroupValues& g, Phase::Point p) const {
  return p == Phase::Initial ? g.initial : p == Phase::Max ? g.max : g.min;
}

double OneCycleLR::lr_at(int64_t step, size_t group) const {
  auto [phase, pct] = locate(step);
  const GroupValues& g = groups_.at(group);
  return anneal(lr_point(g, phase->lr_from), lr_point(g, phase->lr_to), pct);
}

double OneCycleLR::momentum_at(int64_t step, size_t group) const {
  auto [phase, pct] = locate(step);
  const GroupValues& g = groups_.at(group);
  return anneal(phase->momentum_from_max ? g.max_momentum : g.base_momentum,
                phase->momentum_to_max ? g.max_momentum : g.base_momentum, pct);
}

void OneCycleLR::apply_extras(int64_t step) {
  if (!o_.cycle_momentum) return;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const double m = momentum_at(step, g);
    opt_.assign_group_options(g, beta1_ ? GroupOptions{.beta1 = m} : GroupOptions{.momentum = m});
  }
}

}  // namespace strider::optim
