#include "strider/optim/reduce_lr_on_plateau.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "strider/core/error.h"

namespace strider::optim {

namespace {
constexpr const char* kOp = "ReduceLROnPlateau";
}

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& opt, ReduceLROnPlateauOptions o) : opt_(opt), o_(std::move(o)) {
  STRIDER_CHECK(o_.factor < 1.0, kOp, "factor must be < 1, got ", o_.factor,
                " (PyTorch: Factor should be < 1.0); the lr is multiplied by it on a plateau: 0.1 divides it by 10");
  STRIDER_CHECK(o_.factor > 0, kOp, "factor must be > 0, got ", o_.factor,
                "; a factor <= 0 sets the lr to min_lr or below zero at the first plateau");
  STRIDER_CHECK(o_.mode == "min" || o_.mode == "max", kOp, "mode must be \"min\" (the metric should fall, as a "
                "loss) or \"max\" (it should rise, as an accuracy), got \"", o_.mode, "\"");
  STRIDER_CHECK(o_.threshold_mode == "rel" || o_.threshold_mode == "abs", kOp, "threshold_mode must be \"rel\" or "
                "\"abs\", got \"", o_.threshold_mode, "\"");
  STRIDER_CHECK(o_.patience >= 0, kOp, "patience must be >= 0, got ", o_.patience,
                "; it is how many steps without improvement are tolerated");
  STRIDER_CHECK(o_.cooldown >= 0, kOp, "cooldown must be >= 0, got ", o_.cooldown);
  STRIDER_CHECK(std::isfinite(o_.threshold) && o_.threshold >= 0, kOp, "threshold must be >= 0, got ", o_.threshold);
  STRIDER_CHECK(std::isfinite(o_.eps) && o_.eps >= 0, kOp, "eps must be >= 0, got ", o_.eps);
  const size_t n = opt.num_param_groups();
  STRIDER_CHECK(o_.min_lr.size() == 1 || o_.min_lr.size() == n, kOp, "expected ", n, " min_lrs (one per param "
                "group) or one for every group, got ", o_.min_lr.size());
  for (double m : o_.min_lr)
    STRIDER_CHECK(std::isfinite(m) && m >= 0, kOp, "min_lr must be >= 0, got ", m, "; it is the lowest lr a group "
                  "is reduced to");
  min_lrs_ = o_.min_lr.size() == 1 ? std::vector<double>(n, o_.min_lr[0]) : o_.min_lr;
  best_ = o_.mode == "min" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  for (size_t g = 0; g < n; ++g) last_lr_.push_back(opt.lr(g));
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  // PyTorch's comparisons, operation for operation (false for a NaN metric).
  if (o_.mode == "min" && o_.threshold_mode == "rel") return a < best * (1. - o_.threshold);
  if (o_.mode == "min") return a < best - o_.threshold;
  if (o_.threshold_mode == "rel") return a > best * (o_.threshold + 1.);
  return a > best + o_.threshold;
}

void ReduceLROnPlateau::step(double metric) {
  STRIDER_CHECK(min_lrs_.size() == opt_.num_param_groups(), kOp, "the optimizer has ", opt_.num_param_groups(),
                " param groups but the scheduler was built for ", min_lrs_.size(),
                " (add_param_group after building it); build the scheduler after adding the groups");
  ++last_step_;
  if (is_better(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad steps in cooldown do not count
  }
  if (num_bad_epochs_ > o_.patience) {
    reduce_lr();
    cooldown_counter_ = o_.cooldown;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (size_t g = 0; g < opt_.num_param_groups(); ++g) last_lr_.push_back(opt_.lr(g));
}

void ReduceLROnPlateau::reduce_lr() {
  for (size_t g = 0; g < opt_.num_param_groups(); ++g) {
    const double old_lr = opt_.lr(g);
    const double new_lr = std::max(old_lr * o_.factor, min_lrs_[g]);
    if (old_lr - new_lr > o_.eps) opt_.set_lr(g, new_lr);
  }
}

ReduceLROnPlateau::State ReduceLROnPlateau::state() const {
  State s{.last_step = last_step_, .best = best_, .num_bad_epochs = num_bad_epochs_,
          .cooldown_counter = cooldown_counter_, .lrs = {}};
  for (size_t g = 0; g < opt_.num_param_groups(); ++g) s.lrs.push_back(opt_.lr(g));
  return s;
}

void ReduceLROnPlateau::load_state(const State& s) {
  const size_t n = opt_.num_param_groups();
  STRIDER_CHECK(s.lrs.size() == n && min_lrs_.size() == n, kOp, "the state has lrs for ", s.lrs.size(),
                " param groups but the optimizer has ", n, "; load the state of a scheduler on the same groups");
  STRIDER_CHECK(s.last_step >= 0 && s.num_bad_epochs >= 0 && s.cooldown_counter >= 0 &&
                    s.cooldown_counter <= o_.cooldown,
                kOp, "the state's counters (step ", s.last_step, ", bad steps ", s.num_bad_epochs, ", cooldown ",
                s.cooldown_counter, ") cannot come from a scheduler with cooldown ", o_.cooldown,
                "; load the state of a scheduler built with the same options");
  STRIDER_CHECK(!std::isnan(s.best), kOp, "the state's best metric is NaN, which no step records");
  for (size_t g = 0; g < n; ++g)
    STRIDER_CHECK(std::isfinite(s.lrs[g]) && s.lrs[g] >= 0, kOp, "the state's lr of param group ", g, " is ",
                  s.lrs[g], "; an lr is a finite number >= 0");
  last_step_ = s.last_step;
  best_ = s.best;
  num_bad_epochs_ = s.num_bad_epochs;
  cooldown_counter_ = s.cooldown_counter;
  for (size_t g = 0; g < n; ++g) opt_.set_lr(g, s.lrs[g]);
  last_lr_ = s.lrs;
}

}  // namespace strider::optim
