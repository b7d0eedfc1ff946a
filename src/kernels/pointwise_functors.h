#pragma once
// The math of each elementwise op, written once. `exact` uses <cmath> and is what the reference
// kernels run (and what the fast kernels run for float64 and integers); `fast` is the
// vectorizable float32 form used by the cpu kernels for float32, bfloat16 and float16.
#include <cmath>
#include <type_traits>

#include "kernels/pointwise.h"
#include "kernels/vec_math.h"

namespace strider::kernels::fn {

template <class T>
inline T exact_unary(UnaryOp op, T x, const PointwiseArgs& a) {
  using std::abs;
  switch (op) {
    case UnaryOp::Neg: return static_cast<T>(-x);
    case UnaryOp::Abs:
      if constexpr (std::is_unsigned_v<T> || std::is_same_v<T, bool>) return x;
      else return static_cast<T>(x < 0 ? -x : x);
    case UnaryOp::Exp: return static_cast<T>(std::exp(x));
    case UnaryOp::Log: return static_cast<T>(std::log(x));
    case UnaryOp::Sqrt: return static_cast<T>(std::sqrt(x));
    case UnaryOp::Rsqrt: return static_cast<T>(1 / std::sqrt(x));
    case UnaryOp::Relu: return x > T(0) ? x : (x != x ? x : T(0));
    case UnaryOp::Sigmoid: return static_cast<T>(1 / (1 + std::exp(-x)));
    case UnaryOp::Tanh: return static_cast<T>(std::tanh(x));
    case UnaryOp::Gelu: return static_cast<T>(0.5 * x * std::erfc(-x * M_SQRT1_2));
    case UnaryOp::GeluTanh: {
      double xd = static_cast<double>(x);
      return static_cast<T>(0.5 * xd * (1 + std::tanh(0.7978845608028654 * (xd + 0.044715 * xd * xd * xd))));
    }
    case UnaryOp::Clamp: {
      T r = x;
      if (!std::isnan(a.lo) && r < static_cast<T>(a.lo)) r = static_cast<T>(a.lo);
      if (!std::isnan(a.hi) && r > static_cast<T>(a.hi)) r = static_cast<T>(a.hi);
      if constexpr (std::is_floating_point_v<T>) if (x != x) r = x;
      return r;
    }
    case UnaryOp::PowScalar: return static_cast<T>(std::pow(x, static_cast<T>(a.exponent)));
    case UnaryOp::Reciprocal: return static_cast<T>(1 / x);
    case UnaryOp::Sign: return static_cast<T>((T(0) < x) - (x < T(0)));
    case UnaryOp::LogicalNot: return static_cast<T>(!x);
    case UnaryOp::Erf: return static_cast<T>(std::erf(x));
  }
  return x;
}

// Float32 fast path; returns false when the op has no separate fast form.
inline float fast_unary(UnaryOp op, float x, const PointwiseArgs& a) {
  switch (op) {
    case UnaryOp::Exp: return vmath::exp(x);
    case UnaryOp::Erf: return vmath::erf(x);
    case UnaryOp::Log: return vmath::log(x);
    case UnaryOp::Sigmoid: return vmath::sigmoid(x);
    case UnaryOp::Tanh: return vmath::tanh(x);
    case UnaryOp::Gelu: return vmath::gelu(x);
    case UnaryOp::GeluTanh:
      return 0.5f * x * (1.0f + vmath::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
    case UnaryOp::Relu: return x > 0.0f ? x : (x != x ? x : 0.0f);
    case UnaryOp::Abs: return std::fabs(x);
    case UnaryOp::Sqrt: return std::sqrt(x);
    case UnaryOp::Rsqrt: return 1.0f / std::sqrt(x);
    default: return exact_unary<float>(op, x, a);
  }
}

template <class T>
inline auto exact_binary(BinaryOp op, T x, T y, const PointwiseArgs& a) {
  using R = std::conditional_t<std::is_same_v<T, bool>, int, T>;
  switch (op) {
    case BinaryOp::Add: return static_cast<T>(x + static_cast<T>(a.alpha) * y);
    case BinaryOp::Sub: return static_cast<T>(x - static_cast<T>(a.alpha) * y);
    case BinaryOp::Mul: return static_cast<T>(x * y);
    case BinaryOp::Div:
      if constexpr (std::is_integral_v<T>) return static_cast<T>(y == 0 ? 0 : R(x) / R(y));
      else return static_cast<T>(x / y);
    case BinaryOp::Pow: return static_cast<T>(std::pow(x, y));
    case BinaryOp::Maximum:
      if constexpr (std::is_floating_point_v<T>) if (x != x || y != y) return static_cast<T>(NAN);
      return x > y ? x : y;
    case BinaryOp::Minimum:
      if constexpr (std::is_floating_point_v<T>) if (x != x || y != y) return static_cast<T>(NAN);
      return x < y ? x : y;
    case BinaryOp::ThresholdBackward: return y > T(0) ? x : T(0);  // relu's gradient: x where y > 0
    default: break;
  }
  return x;
}

template <class T>
inline bool exact_compare(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::Eq: return x == y;
    case BinaryOp::Ne: return x != y;
    case BinaryOp::Lt: return x < y;
    case BinaryOp::Le: return x <= y;
    case BinaryOp::Gt: return x > y;
    case BinaryOp::Ge: return x >= y;
    case BinaryOp::LogicalAnd: return x && y;
    case BinaryOp::LogicalOr: return x || y;
    default: return false;
  }
}

}  // namespace strider::kernels::fn
