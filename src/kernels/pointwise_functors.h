#pragma once
// The math of each elementwise op, from the rows of core/pointwise_table.h. `exact` uses
// <cmath> and is what the reference kernels run (and what the fast kernels run for float64 and
// integers); `fast` is the vectorizable float32 form used by the cpu kernels for float32,
// bfloat16 and float16. The helpers below are the rows' math that needs more than an expression.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/isa_namespace.h"
#include "kernels/op_dispatch.h"
#include "kernels/pointwise.h"
#include "kernels/vec_math.h"

namespace strider::kernels {
inline namespace STRIDER_ISA_NAMESPACE {
namespace fn {

template <class M>
inline M abs_exact(M x) {
  if constexpr (std::is_unsigned_v<M> || std::is_same_v<M, bool>) return x;
  else return x < 0 ? -x : x;
}

// NaN propagates.
template <class M>
inline M relu_exact(M x) {
  return x > M(0) ? x : (x != x ? x : M(0));
}

inline double gelu_tanh_exact(double x) {
  return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
[[gnu::always_inline]] inline float gelu_tanh_fast(float x) {  // inlined in simd loops, as vmath is
  return 0.5f * x * (1.0f + vmath::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
}

// g * d/dx gelu(x) = g (Phi(x) + x phi(x)), as PyTorch's GeluBackward computes it.
template <class M>
inline M gelu_backward_exact(M g, M x) {
  const M cdf = static_cast<M>(0.5 * std::erfc(-x * M_SQRT1_2));
  const M pdf = static_cast<M>(std::exp(-0.5 * x * x) * 0.3989422804014327);
  return static_cast<M>(g * (cdf + x * pdf));
}

// g * d/dx of the tanh form 0.5 x (1 + tanh(u)), u = k (x + c x^3).
template <class M>
inline M gelu_tanh_backward_exact(M g, M x) {
  const double k = 0.7978845608028654, c = 0.044715, xd = x;
  const double t = std::tanh(k * (xd + c * xd * xd * xd));
  return static_cast<M>(g * (0.5 * (1 + t) + 0.5 * xd * (1 - t * t) * k * (1 + 3 * c * xd * xd)));
}

// g * d/dx silu(x) = g s (1 + x (1 - s)), s = sigmoid(x): PyTorch's SiluBackward.
template <class M>
inline M silu_backward_exact(M g, M x) {
  const M s = M(1) / (M(1) + std::exp(-x));
  return g * s * (M(1) + x * (M(1) - s));
}

// The activations' math as PyTorch 1.13's vectorized CPU kernels write it (the path its dense
// tensors take): the same comparisons, so NaN and the points on a kink go the same way;
// coefficients multiplied in M, and elu's exp(x) - 1 rather than expm1, as there.
template <class M>
inline M relu6_exact(M v) {
  return std::min(std::max(v, M(0)), M(6));
}
template <class M>
inline M elu_exact(M x, const PointwiseArgs& a) {
  const M negcoef = static_cast<M>(a.alpha) * static_cast<M>(a.scale);
  return x <= M(0) ? (std::exp(x * static_cast<M>(a.input_scale)) - M(1)) * negcoef : x * static_cast<M>(a.scale);
}
template <class M>
inline M elu_backward_exact(M g, M x, const PointwiseArgs& a) {
  const M negcoef = static_cast<M>(a.alpha) * static_cast<M>(a.scale);
  const M negiptcoef = static_cast<M>(a.input_scale);
  return x <= M(0) ? g * negiptcoef * negcoef * std::exp(x * negiptcoef) : g * static_cast<M>(a.scale);
}
template <class M>
inline M softplus_exact(M x, const PointwiseArgs& a) {
  const M beta = static_cast<M>(a.beta);
  return x * beta > static_cast<M>(a.threshold) ? x : std::log1p(std::exp(x * beta)) / beta;
}
template <class M>
inline M softplus_backward_exact(M g, M x, const PointwiseArgs& a) {
  const M beta = static_cast<M>(a.beta);
  const M z = std::exp(x * beta);
  return x * beta > static_cast<M>(a.threshold) ? g : g * z / (z + M(1));
}
template <class M>
inline M hardswish_backward_exact(M g, M x) {
  return x < M(-3) ? M(0) : x >= M(3) ? g : g * (x / M(3) + M(0.5));
}
template <class M>
inline M mish_backward_exact(M g, M x) {
  const M sigmoid = M(1) / (M(1) + std::exp(-x));
  const M tanh_softplus = std::tanh(std::log1p(std::exp(x)));
  return g * (tanh_softplus + x * sigmoid * (M(1) - tanh_softplus * tanh_softplus));
}

// lo/hi NaN = no bound; a NaN input stays NaN.
template <class M>
inline M clamp_exact(M x, const PointwiseArgs& a) {
  M r = x;
  if (!std::isnan(a.lo) && r < static_cast<M>(a.lo)) r = static_cast<M>(a.lo);
  if (!std::isnan(a.hi) && r > static_cast<M>(a.hi)) r = static_cast<M>(a.hi);
  if constexpr (std::is_floating_point_v<M>) if (x != x) r = x;
  return r;
}

// Integer division by zero gives 0 here; the ops layer computes true division in floating point.
template <class M>
inline M div_exact(M x, M y) {
  using R = std::conditional_t<std::is_same_v<M, bool>, int, M>;
  if constexpr (std::is_integral_v<M>) return static_cast<M>(y == 0 ? 0 : R(x) / R(y));
  else return x / y;
}

// Integers as PyTorch's powi: the product wraps in the integer type (uint8 249^2 is 49), and a
// negative exponent gives 1 for base 1, +-1 for base -1, else 0. The ops layer refuses bool
// operands and a negative Scalar exponent.
template <class M>
inline M pow_exact(M x, M y) {
  if constexpr (std::is_integral_v<M> && !std::is_same_v<M, bool>) {
    if constexpr (std::is_signed_v<M>) {
      if (y < 0) return x == 1 ? M(1) : x == -1 ? M((y % 2) ? -1 : 1) : M(0);
    }
    // Unsigned 64-bit products wrap without undefined behaviour; the low bits are the result.
    uint64_t result = 1, base = static_cast<uint64_t>(x);
    for (auto e = static_cast<uint64_t>(y); e != 0; e >>= 1) {
      if (e & 1) result *= base;
      base *= base;
    }
    return static_cast<M>(result);
  } else {
    return std::pow(x, y);
  }
}

// NaN in either operand gives NaN (torch.maximum / torch.minimum).
template <class M>
inline M maximum_exact(M x, M y) {
  if constexpr (std::is_floating_point_v<M>) if (x != x || y != y) return static_cast<M>(NAN);
  return x > y ? x : y;
}
template <class M>
inline M minimum_exact(M x, M y) {
  if constexpr (std::is_floating_point_v<M>) if (x != x || y != y) return static_cast<M>(NAN);
  return x < y ? x : y;
}

// One row's exact math, with its op a compile-time constant.
template <UnaryOp OP, class M>
inline M exact_unary(M x, [[maybe_unused]] const PointwiseArgs& a) {
#define STRIDER_EXACT(Enum, function, signature, kind, rule, domain, exact, ...) \
  if constexpr (OP == UnaryOp::Enum) return static_cast<M>(exact);
  STRIDER_UNARY_OPS(STRIDER_EXACT)
#undef STRIDER_EXACT
}

// One row's float32 form.
template <UnaryOp OP>
inline float fast_unary(float x, [[maybe_unused]] const PointwiseArgs& a) {
  using M [[maybe_unused]] = float;
#define STRIDER_FAST(Enum, function, signature, kind, rule, domain, exact, fast, ...) \
  if constexpr (OP == UnaryOp::Enum) return static_cast<float>(fast);
  STRIDER_UNARY_OPS(STRIDER_FAST)
#undef STRIDER_FAST
}

template <BinaryOp OP, class M>
inline M exact_binary(M x, M y, [[maybe_unused]] const PointwiseArgs& a) {
#define STRIDER_EXACT(Enum, function, signature, kind, rule, exact, fast) \
  if constexpr (OP == BinaryOp::Enum) return static_cast<M>(exact);
  STRIDER_BINARY_OPS(STRIDER_EXACT)
#undef STRIDER_EXACT
}

// One arithmetic row's float32 form.
template <BinaryOp OP>
inline float fast_binary(float x, float y, [[maybe_unused]] const PointwiseArgs& a) {
  using M [[maybe_unused]] = float;
#define STRIDER_FAST(Enum, function, signature, kind, rule, exact, fast) \
  if constexpr (OP == BinaryOp::Enum) return static_cast<float>(fast);
  STRIDER_BINARY_OPS(STRIDER_FAST)
#undef STRIDER_FAST
}

template <BinaryOp OP, class M>
inline bool exact_compare(M x, M y) {
  [[maybe_unused]] const PointwiseArgs a{};  // the arithmetic rows' expressions name it
#define STRIDER_EXACT(Enum, function, signature, kind, rule, exact, fast) \
  if constexpr (OP == BinaryOp::Enum) return static_cast<bool>(exact);
  STRIDER_BINARY_OPS(STRIDER_EXACT)
#undef STRIDER_EXACT
}

}  // namespace fn
}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels
