#include "strider/optim/cosine_annealing_warm_restarts.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "strider/core/error.h"

namespace strider::optim {

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& opt, int64_t T_0, int64_t T_mult, double eta_min)
    : LRScheduler(opt), t_0_(T_0), t_mult_(T_mult), eta_min_(eta_min) {
  const char* op = "CosineAnnealingWarmRestarts";
  STRIDER_CHECK(T_0 >= 1, op, "T_0 must be a positive number of steps, got ", T_0,
                "; it is the length of the first cycle (PyTorch: expected positive integer T_0)");
  STRIDER_CHECK(T_mult >= 1, op, "T_mult must be >= 1, got ", T_mult,
                "; each cycle is T_mult times as long as the one before (1: all are T_0 long)");
  STRIDER_CHECK(std::isfinite(eta_min) && eta_min >= 0, op, "eta_min must be >= 0, got ", eta_min,
                "; it is the lowest lr, reached at the end of each cycle");
  initial_step();
}

std::pair<int64_t, int64_t> CosineAnnealingWarmRestarts::cycle_at(int64_t step) const {
  // PyTorch's step() counts T_cur up by one and, on reaching T_i, subtracts T_i and multiplies
  // T_i by T_mult: whole numbers, so this loop (over cycles, not steps) gives its values.
  if (t_mult_ == 1) return {step % t_0_, t_0_};
  int64_t t_cur = step, t_i = t_0_;
  while (t_cur >= t_i) {
    t_cur -= t_i;
    int64_t next = 0;
    if (__builtin_mul_overflow(t_i, t_mult_, &next)) return {t_cur, std::numeric_limits<int64_t>::max()};
    t_i = next;
  }
  return {t_cur, t_i};
}

double CosineAnnealingWarmRestarts::lr_at(int64_t step, size_t group) const {
  const auto [t_cur, t_i] = cycle_at(step);
  // PyTorch's expression, in its order of operations (this file is built with -ffp-contract=off).
  return eta_min_ + (base_lrs_.at(group) - eta_min_) *
                        (1 + std::cos(std::numbers::pi * static_cast<double>(t_cur) / static_cast<double>(t_i))) / 2;
}

}  // namespace strider::optim
