#include "strider/dist/exact_sum.h"

#include <algorithm>
#include <cmath>

#include "strider/core/tensor.h"
#include "dist/buffer_math.h"

namespace strider::dist {
namespace {

constexpr int kLoBits = 52;
constexpr int64_t kLoMask = (int64_t{1} << kLoBits) - 1;
constexpr int kDigitBits = 32, kLowestExponent = -320;

// One value's limbs, branch-free so the loops vectorize. Every product below is by a power of
// two and exact, so contracting any of them into an FMA cannot change a bit (the vectorized
// body and the scalar tail agree). Values out of range become 0 and set `bad`.
inline void limbs_of(float value, int64_t& hi, int64_t& lo, int64_t& bad) {
  const double d0 = value;
  const bool ok = std::fabs(d0) < kMaxMagnitude;  // NaN fails the comparison too
  const double d = ok ? d0 : 0.0;
  bad += ok ? 0 : 1;
  // X = d * 2^72 split at bit 52: both parts are exact in double (d has 24 significant bits),
  // only the part below 2^-72 is rounded (to nearest even: deterministic).
  const double h = std::floor(d * 0x1p20);
  const double l = std::nearbyint(d * 0x1p72 - h * 0x1p52);
  const auto li = static_cast<int64_t>(l);
  hi = static_cast<int64_t>(h) + (li >> kLoBits);  // l may round up to 2^52
  lo = li & kLoMask;
}

// X * 2^-72 / divisor as float32: hi * 2^-20 and lo * 2^-72 are exact (|hi| < 2^53,
// 0 <= lo < 2^52), so their sum is X * 2^-72 rounded once; one function, so every path that
// turns limbs into floats gives the same bits.
inline float limbs_value(int64_t hi, int64_t lo, double divisor) {
  return static_cast<float>((static_cast<double>(hi) * 0x1p-20 + static_cast<double>(lo) * 0x1p-72) / divisor);
}

}  // namespace

int64_t sum_to_float(const float* v, int64_t stride, int terms, int64_t n, double divisor, float* out) {
  int64_t bad = 0;
#pragma omp simd reduction(+ : bad)
  for (int64_t i = 0; i < n; ++i) {
    int64_t h = 0, l = 0;
    for (int t = 0; t < terms; ++t) {
      int64_t ht = 0, lt = 0;
      limbs_of(v[t * stride + i], ht, lt, bad);
      h += ht;
      l += lt;
    }
    out[i] = limbs_value(h + (l >> kLoBits), l & kLoMask, divisor);
  }
  return bad;
}

int64_t sum_to_limbs(const float* v, int64_t stride, int terms, int64_t n, int64_t* hi, int64_t* lo) {
  int64_t bad = 0;
#pragma omp simd reduction(+ : bad)
  for (int64_t i = 0; i < n; ++i) {
    int64_t h = 0, l = 0;
    for (int t = 0; t < terms; ++t) {
      int64_t ht = 0, lt = 0;
      limbs_of(v[t * stride + i], ht, lt, bad);
      h += ht;
      l += lt;
    }
    hi[i] = h + (l >> kLoBits);
    lo[i] = l & kLoMask;
  }
  return bad;
}

int64_t add_to_limbs(const float* v, int64_t n, int64_t* hi, int64_t* lo) {
  int64_t bad = 0;
#pragma omp simd reduction(+ : bad)
  for (int64_t i = 0; i < n; ++i) {
    int64_t h = 0, l = 0;
    limbs_of(v[i], h, l, bad);
    hi[i] += h;
    lo[i] += l;
  }
  normalize_limbs(hi, lo, n);
  return bad;
}

void normalize_limbs(int64_t* hi, int64_t* lo, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    hi[i] += lo[i] >> kLoBits;  // arithmetic shift: floor, also for negative lo
    lo[i] &= kLoMask;
  }
}

void limbs_to_float(const int64_t* hi, const int64_t* lo, int64_t n, double divisor, float* out) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = limbs_value(hi[i], lo[i], divisor);
}

ExactSum::ExactSum() : limbs_(kLimbs, 0) {}

void ExactSum::add(double value) {
  if (value == 0) return;
  if (!std::isfinite(value) || std::fabs(value) >= std::ldexp(1.0, 280)) {  // 85 bits must fit below bit 640
    overflowed_ = true;
    return;
  }
  int exp = 0;
  const double m = std::frexp(std::fabs(value), &exp);  // value = m * 2^exp, m in [0.5, 1)
  // The 53-bit integer mantissa M = m * 2^53 sits at bit (exp - 53) of the accumulator.
  int64_t mant = static_cast<int64_t>(std::ldexp(m, 53));
  int shift = exp - 53 - kLowestExponent;
  if (shift < 0) {  // below the accumulator's resolution: drop those bits
    if (shift <= -53) return;
    mant >>= -shift;
    shift = 0;
  }
  const int64_t sign = value < 0 ? -1 : 1;
  int limb = shift / kDigitBits, bit = shift % kDigitBits;
  // mant << bit spans up to 85 bits: three digits.
  const unsigned __int128 wide = static_cast<unsigned __int128>(mant) << bit;
  for (int k = 0; k < 3 && limb + k < kLimbs; ++k) {
    const auto digit = static_cast<int64_t>((wide >> (kDigitBits * k)) & 0xffffffffu);
    limbs_[static_cast<size_t>(limb + k)] += sign * digit;
  }
  if (++pending_ >= (int64_t{1} << 29)) normalize();
}

void ExactSum::add_squares(const float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double d = v[i];
    add(d * d);  // exact: a float32 square has at most 48 significant bits
  }
}

void ExactSum::normalize() {
  for (int k = 0; k + 1 < kLimbs; ++k) {
    const int64_t carry = limbs_[static_cast<size_t>(k)] >> kDigitBits;  // floor
    limbs_[static_cast<size_t>(k)] -= carry * (int64_t{1} << kDigitBits);
    limbs_[static_cast<size_t>(k + 1)] += carry;
  }
  pending_ = 0;
}

double ExactSum::value() const {
  double total = 0;
  for (int k = kLimbs; k-- > 0;)
    total += std::ldexp(static_cast<double>(limbs_[static_cast<size_t>(k)]), kLowestExponent + kDigitBits * k);
  return total;
}

void all_reduce_exact(ProcessGroup& pg, ExactSum& sum) {
  sum.normalize();
  if (pg.size() == 1) return;
  auto& limbs = sum.limbs();
  Tensor t = detail::flat_buffer(ExactSum::kLimbs + 1, kLong);
  auto* d = t.data_ptr<int64_t>();
  std::copy(limbs.begin(), limbs.end(), d);
  d[ExactSum::kLimbs] = sum.overflowed() ? 1 : 0;
  pg.all_reduce(t, ReduceOp::Sum);
  std::copy(d, d + ExactSum::kLimbs, limbs.begin());
  if (d[ExactSum::kLimbs] != 0) sum.set_overflowed();
  sum.normalize();
}

}  // namespace strider::dist
