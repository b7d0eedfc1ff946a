#include "strider/dist/exact_sum.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "strider/core/tensor.h"
#include "dist/buffer_math.h"

namespace strider::dist {
namespace {

constexpr int kLoBits = 50;
constexpr int64_t kLoMask = (int64_t{1} << kLoBits) - 1;
constexpr int kDigitBits = 32, kLowestExponent = -320;

// Adding 1.5 * 2^52 to a double of magnitude below 2^51 leaves round-to-nearest-even of it in
// the low bits of the sum's representation: rounding and conversion in two vector instructions.
constexpr double kRounder = 0x1.8p52;
inline int64_t rounded(double x) { return std::bit_cast<int64_t>(x + kRounder) - std::bit_cast<int64_t>(kRounder); }

// One value's limbs, branch-free so the loops vectorize. Every product below is by a power of
// two and exact, so contracting any of them into an FMA cannot change a bit (the vectorized
// body and the scalar tail agree). Values out of range become 0 and set `bad`. hi is
// round(v * 2^22) and lo the rest, |lo| <= 2^49 (both exact in double), rounded below 2^-72.
inline void limbs_of(float value, int64_t& hi, int64_t& lo, int64_t& bad) {
  const double d0 = value;
  const bool ok = std::fabs(d0) < kMaxMagnitude;  // NaN fails the comparison too
  const double d = ok ? d0 : 0.0;
  bad += ok ? 0 : 1;
  const double y = d * 0x1p22 + kRounder;
  hi = std::bit_cast<int64_t>(y) - std::bit_cast<int64_t>(kRounder);
  lo = rounded(d * 0x1p72 - (y - kRounder) * 0x1p50);
}

// X * 2^-72 / divisor as float32: hi * 2^-22 and lo * 2^-72 are exact (|hi| < 2^53,
// 0 <= lo < 2^50), so their sum is X * 2^-72 rounded once; one function, so every path that
// turns limbs into floats gives the same bits.
inline float limbs_value(int64_t hi, int64_t lo, double divisor) {
  return static_cast<float>((static_cast<double>(hi) * 0x1p-22 + static_cast<double>(lo) * 0x1p-72) / divisor);
}

}  // namespace

namespace {

// h[i], l[i] (=, or += when `add`) the limbs summed over T rows of v (row t at v + t * stride),
// unnormalized. T is a constant so the rows unroll and the elements vectorize.
template <int T>
int64_t add_rows(const float* v, int64_t stride, int64_t n, int64_t* h, int64_t* l, bool add) {
  int64_t bad = 0;
#pragma omp simd reduction(+ : bad)
  for (int64_t i = 0; i < n; ++i) {
    int64_t hs = add ? h[i] : 0, ls = add ? l[i] : 0;
    for (int t = 0; t < T; ++t) {
      int64_t ht = 0, lt = 0;
      limbs_of(v[t * stride + i], ht, lt, bad);
      hs += ht;
      ls += lt;
    }
    h[i] = hs;
    l[i] = ls;
  }
  return bad;
}

int64_t add_rows(int rows, const float* v, int64_t stride, int64_t n, int64_t* h, int64_t* l, bool add) {
  switch (rows) {
    case 1: return add_rows<1>(v, stride, n, h, l, add);
    case 2: return add_rows<2>(v, stride, n, h, l, add);
    case 3: return add_rows<3>(v, stride, n, h, l, add);
    case 4: return add_rows<4>(v, stride, n, h, l, add);
    case 5: return add_rows<5>(v, stride, n, h, l, add);
    case 6: return add_rows<6>(v, stride, n, h, l, add);
    case 7: return add_rows<7>(v, stride, n, h, l, add);
    default: return add_rows<8>(v, stride, n, h, l, add);
  }
}

// Sums `terms` rows tile by tile (the tile's limbs stay in cache), eight rows at a time, and
// hands each tile's normalized limbs to emit(first element, count, hi, lo).
template <class Emit>
int64_t sum_rows(const float* v, int64_t stride, int terms, int64_t n, const Emit& emit) {
  // More rows would overflow the int64 limb sums silently.
  STRIDER_CHECK(terms >= 0 && terms <= kMaxContributions, "exact sum", terms, " contributions per element exceed the ",
                kMaxContributions, " the int64 limbs hold without overflow; sum in groups of at most ",
                kMaxContributions, " and add the groups' limbs");
  constexpr int64_t kTile = 1024;
  int64_t h[kTile], l[kTile];
  int64_t bad = 0;
  for (int64_t start = 0; start < n; start += kTile) {
    const int64_t count = std::min(kTile, n - start);
    for (int t = 0; t < terms; t += 8)
      bad += add_rows(std::min(8, terms - t), v + t * stride + start, stride, count, h, l, t > 0);
    normalize_limbs(h, l, count);
    emit(start, count, h, l);
  }
  return bad;
}

// sum_to_float for a constant number of rows: all in registers, one pass.
template <int T>
int64_t rows_to_float(const float* v, int64_t stride, int64_t n, double divisor, float* out) {
  int64_t bad = 0;
#pragma omp simd reduction(+ : bad)
  for (int64_t i = 0; i < n; ++i) {
    int64_t hs = 0, ls = 0;
    for (int t = 0; t < T; ++t) {
      int64_t ht = 0, lt = 0;
      limbs_of(v[t * stride + i], ht, lt, bad);
      hs += ht;
      ls += lt;
    }
    out[i] = limbs_value(hs + (ls >> kLoBits), ls & kLoMask, divisor);
  }
  return bad;
}

}  // namespace

int64_t sum_to_float(const float* v, int64_t stride, int terms, int64_t n, double divisor, float* out) {
  switch (terms) {  // the usual shard group sizes, in one pass
    case 1: return rows_to_float<1>(v, stride, n, divisor, out);
    case 2: return rows_to_float<2>(v, stride, n, divisor, out);
    case 3: return rows_to_float<3>(v, stride, n, divisor, out);
    case 4: return rows_to_float<4>(v, stride, n, divisor, out);
    case 8: return rows_to_float<8>(v, stride, n, divisor, out);
    default: break;
  }
  return sum_rows(v, stride, terms, n, [&](int64_t start, int64_t count, const int64_t* h, const int64_t* l) {
#pragma omp simd
    for (int64_t i = 0; i < count; ++i) out[start + i] = limbs_value(h[i], l[i], divisor);
  });
}

int64_t sum_to_limbs(const float* v, int64_t stride, int terms, int64_t n, int64_t* hi, int64_t* lo) {
  return sum_rows(v, stride, terms, n, [&](int64_t start, int64_t count, const int64_t* h, const int64_t* l) {
    std::copy(h, h + count, hi + start);
    std::copy(l, l + count, lo + start);
  });
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
