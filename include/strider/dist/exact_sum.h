#pragma once
// Sums of floats whose result does not depend on the order of the additions, and so not on how
// many ranks share the work: the deterministic mode's gradient reduction and norms.
//
// A float32 v becomes the integer X = round(v * 2^kFractionBits), held in two int64 limbs,
// X = hi * 2^50 + lo with 0 <= lo < 2^50 once normalized. Integer sums are exact and associative, so limb-wise
// int64 sums (any all-reduce or reduce-scatter with ReduceOp::Sum) of up to kMaxContributions per
// element, then normalize_limbs, give the same X whatever the order. |v| must stay below
// kMaxMagnitude; values are resolved to 2^-72 (about 2e-22), far below float32's precision for
// any gradient that matters.
#include <cstdint>
#include <vector>

#include "strider/dist/process_group.h"

namespace strider::dist {

constexpr int kFractionBits = 72;
// Contributions per element that limb-wise int64 sums can take without overflow.
constexpr int kMaxContributions = 1024;
constexpr double kMaxMagnitude = 0x1p29;  // X stays below 2^101; |hi| of one value below 2^51

// Writes the exact sum of `terms` rows of n values each (row t at v + t * stride) to (hi, lo),
// normalized, in one pass (terms <= kMaxContributions); returns the count of values out of range.
int64_t sum_to_limbs(const float* v, int64_t stride, int terms, int64_t n, int64_t* hi, int64_t* lo);
// The same sum divided by `divisor` and rounded to float32 (limbs_to_float's bits), without
// materializing the limbs.
int64_t sum_to_float(const float* v, int64_t stride, int terms, int64_t n, double divisor, float* out);
// Adds v[i] to (hi[i], lo[i]) for i < n; values that are not finite or not below kMaxMagnitude
// add nothing and are counted (the return value), so the caller can fail the reduction.
int64_t add_to_limbs(const float* v, int64_t n, int64_t* hi, int64_t* lo);
// Carries lo's overflow into hi after limb-wise sums (0 <= lo < 2^50 again).
void normalize_limbs(int64_t* hi, int64_t* lo, int64_t n);
// out[i] = X[i] * 2^-kFractionBits / divisor, rounded to float32 (deterministic: the same limbs
// give the same floats).
void limbs_to_float(const int64_t* hi, const int64_t* lo, int64_t n, double divisor, float* out);

// An exact sum of doubles of either sign below 2^280 in magnitude (bits below 2^-320 are
// dropped; larger or non-finite values set overflowed()): gradient norms' sums of squares and
// loss averages. Limbs hold 32-bit digits in int64 so that limb-wise sums of up to 2^30
// accumulators (an all-reduce over the ranks) cannot overflow.
class ExactSum {
 public:
  static constexpr int kLimbs = 20;  // 640 bits: 2^-320 .. 2^320
  ExactSum();
  void add(double value);
  // Adds the squares of n float32 values.
  void add_squares(const float* v, int64_t n);
  std::vector<int64_t>& limbs() { return limbs_; }  // for an int64 all-reduce (Sum), then normalize()
  void normalize();
  double value() const;  // the sum, rounded once per limb from the top (deterministic)
  bool overflowed() const { return overflowed_; }
  void set_overflowed() { overflowed_ = true; }

 private:
  std::vector<int64_t> limbs_;
  int64_t pending_ = 0;  // adds since the last normalize
  bool overflowed_ = false;
};

// Sums `sum` over the ranks of `pg` in place (one int64 all-reduce of its limbs and overflow
// flag): every rank ends with the same value, whatever the ranks' shares. Collective.
void all_reduce_exact(ProcessGroup& pg, ExactSum& sum);

}  // namespace strider::dist
