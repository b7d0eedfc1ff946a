#pragma once
// Branch-free float32 math that GCC vectorizes inside `#pragma omp simd` loops (AVX2/AVX-512):
// Cephes-style range reduction plus minimax polynomials, about 1-2 ulp over the float range.
// The reference kernels use <cmath>; tests compare the two.
#include <bit>
#include <cmath>
#include <cstdint>

#include "kernels/isa_namespace.h"

namespace strider::kernels {
inline namespace STRIDER_ISA_NAMESPACE {
namespace vmath {

// Always inlined: a call left in a `#pragma omp simd` loop makes the loop scalar (GCC stopped
// inlining gelu_backward into the bfloat16 kernel once it grew; scripts/check-vmath-vectorized.sh
// checks every floating dtype's kernel).
#define STRIDER_VMATH [[gnu::always_inline]] inline

STRIDER_VMATH float exp(float x) {
  const float hi = 88.7228394f, lo = -103.972084f;
  // Below lo (the result is 0, set at the end) and NaN (returned as NaN at the end) compute with
  // 0: converting NaN to an integer below would be undefined behaviour, and computing with lo
  // would make a subnormal 2^-150 that Intel cores take a microcode assist for (about 150 cycles a
  // lane), in every -inf a mask writes.
  float xc = x > hi ? hi : (x >= lo ? x : 0.0f);
  float n = std::nearbyint(xc * 1.44269504088896341f);
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n in two halves so n up to 128 (for x near the top of the range) does not overflow.
  int32_t ni = static_cast<int32_t>(n);
  int32_t n1 = ni >> 1, n2 = ni - n1;
  float s1 = std::bit_cast<float>((n1 + 127) << 23);
  float s2 = std::bit_cast<float>((n2 + 127) << 23);
  float result = p * s1 * s2;
  result = x > hi ? INFINITY : result;
  result = x < lo ? 0.0f : result;
  return x != x ? x : result;
}

STRIDER_VMATH float log(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  int32_t e = static_cast<int32_t>((u >> 23) & 0xff) - 126;
  float m = std::bit_cast<float>((u & 0x007fffffu) | 0x3f000000u);  // in [0.5, 1)
  // Subnormals: scale up first (rare; handled by a select to stay branch-free).
  bool sub = x < 1.17549435e-38f && x > 0.0f;
  float xs = x * 8388608.0f;  // 2^23
  uint32_t us = std::bit_cast<uint32_t>(xs);
  int32_t es = static_cast<int32_t>((us >> 23) & 0xff) - 126 - 23;
  float ms = std::bit_cast<float>((us & 0x007fffffu) | 0x3f000000u);
  e = sub ? es : e;
  m = sub ? ms : m;
  bool small = m < 0.707106781186547524f;
  e = small ? e - 1 : e;
  m = small ? m + m - 1.0f : m - 1.0f;
  float z = m * m;
  float y = 7.0376836292e-2f;
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  float fe = static_cast<float>(e);
  y += fe * -2.12194440e-4f;
  y += -0.5f * z;
  float r = m + y + fe * 0.693359375f;
  r = x == INFINITY ? INFINITY : r;
  r = x == 0.0f ? -INFINITY : r;
  r = x < 0.0f ? NAN : r;
  return x != x ? x : r;
}

STRIDER_VMATH float sigmoid(float x) { return 1.0f / (1.0f + exp(-x)); }

STRIDER_VMATH float tanh(float x) {
  float ax = std::fabs(x);
  // Large |x|: 1 - 2 / (exp(2|x|) + 1); small |x|: odd polynomial (avoids cancellation).
  float big = 1.0f - 2.0f / (exp(2.0f * ax) + 1.0f);
  big = std::copysign(big, x);
  float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  float small = x + x * z * p;
  return ax < 0.625f ? small : big;
}

// The exponent of erfc's fit, erfc(x) = t exp(-x^2 + P(t)) for x >= 0, t = 1 / (1 + x / 2): the
// Chebyshev fit of Numerical Recipes' erfcc, relative error below 1.2e-7 everywhere, so gelu keeps
// its relative accuracy far into the negative tail where 1 + erf(x) would cancel. P(t) lies in
// [-1.2656, 0] for t in [0, 1].
STRIDER_VMATH float erfc_fit_exponent(float t) {
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return p;
}

// exp(p) for p in P's range [-1.2656, 0]: the Taylor series about -0.6328 to degree 9 (truncation
// under 6e-9 relative), no range reduction, a third of exp's instructions.
STRIDER_VMATH float exp_of_erfc_fit(float p) {
  const float d = p + 0.6328f;
  float s = 2.75573192e-6f;
  s = s * d + 2.48015873e-5f;
  s = s * d + 1.98412698e-4f;
  s = s * d + 1.38888889e-3f;
  s = s * d + 8.33333333e-3f;
  s = s * d + 4.16666667e-2f;
  s = s * d + 1.66666667e-1f;
  s = s * d + 0.5f;
  s = s * d + 1.0f;
  s = s * d + 1.0f;
  return s * 0.531102638f;  // exp(-0.6328f)
}

STRIDER_VMATH float erfc(float x) {
  float z = std::fabs(x);
  float t = 1.0f / (1.0f + 0.5f * z);
  float ans = t * exp(-z * z + erfc_fit_exponent(t));
  return x >= 0.0f ? ans : 2.0f - ans;
}

STRIDER_VMATH float erf(float x) {
  // Near zero 1 - erfc(x) cancels; the Taylor series is exact to float precision there.
  float z = x * x;
  float s = x * (1.1283791671f + z * (-0.3761263890f + z * (0.1128379167f + z * -0.0268661706f)));
  return std::fabs(x) < 0.25f ? s : 1.0f - erfc(x);
}

STRIDER_VMATH float gelu(float x) { return 0.5f * x * erfc(-x * 0.70710678118654752f); }

// g * d/dx gelu(x) = g (Phi(x) + x phi(x)), in one pass (the composed gradient took eleven), with
// one exp: e = exp(-x^2 / 2) is the PDF's and erfc's exp(-z^2) at z = |x| / sqrt(2), so
// Phi(x) = erfc(-x / sqrt(2)) / 2 takes t e exp(P(t)) with exp(P) from its short series: faster
// than two exps, as accurate (docs/benchmarks.md).
STRIDER_VMATH float gelu_backward(float g, float x) {
  const float e = exp(-0.5f * x * x);
  const float t = 1.0f / (1.0f + 0.5f * std::fabs(x * 0.70710678118654752f));
  const float tail = t * e * exp_of_erfc_fit(erfc_fit_exponent(t));  // erfc(|x| / sqrt(2))
  const float cdf = 0.5f * (x <= 0.0f ? tail : 2.0f - tail);
  return g * (cdf + x * e * 0.3989422804014327f);
}

// g * d/dx silu(x) in one pass (PyTorch's silu_backward; composed it took six and the result's
// strides followed sigmoid's instead of x's).
STRIDER_VMATH float silu_backward(float g, float x) {
  const float s = sigmoid(x);
  return g * s * (1.0f + x * (1.0f - s));
}

// g * d/dx of the tanh form 0.5 x (1 + tanh(u)), u = k (x + c x^3): 0.5 (1 + tanh(u)) is s =
// sigmoid(2u) and 1 - tanh(u)^2 is 4 s (1 - s), each computed without the cancellation of
// 1 + tanh(u) in the negative tail.
STRIDER_VMATH float gelu_tanh_backward(float g, float x) {
  const float k = 0.7978845608028654f, c = 0.044715f;
  const float u2 = 2.0f * k * (x + c * x * x * x);
  const float s = 1.0f / (1.0f + exp(-u2)), rest = 1.0f / (1.0f + exp(u2));  // s and 1 - s
  return g * (s + 2.0f * x * s * rest * k * (1.0f + 3.0f * c * x * x));
}

#undef STRIDER_VMATH

}  // namespace vmath
}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels
