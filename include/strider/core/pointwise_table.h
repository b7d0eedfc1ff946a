#pragma once
// The elementwise ops, one row each: the one place an op is added. Every layer expands these
// lists with its own X to get what it needs: the public headers (ops/pointwise.h,
// autograd/functions.h) the declarations; the kernels their enum, names, dtype rules,
// compile-time dispatch and math; the ops layer the functions; autograd their gradients; the
// tests their conformance and gradient-check lists; the oracle replay its op names. It lives in
// core, the one layer all of them may include, and includes nothing: the columns are text until
// a layer expands them, and the public headers expand only the first three (Enum, function,
// signature), so the math and gradient columns reach no user's code.
//
// STRIDER_UNARY_OPS(X): X(Enum, function, signature, kind, dtype_rule, domain, exact, fast, gradient)
//   signature   what the public headers declare (STRIDER_POINTWISE_SIGNATURE_* below): Tensor is
//               f(a); Gelu, Clamp and Exponent add that function's arguments; None declares
//               nothing (GeluTanh is gelu(a, "tanh")).
//   kind        Plain: the ops:: and the differentiable function are generated from this row;
//               NoGrad: the same, without a gradient; Custom: the math is here, the functions
//               (extra arguments) are written by hand.
//   dtype_rule  Same: computes in the input's dtype; SameNotBool: the same, bool refused;
//               Floating: integers compute in float32; Bool: the result is bool.
//   domain      where the tests sample: Any, or Positive (log, sqrt, ...).
//   exact       the math in the op-math type M of x (<cmath>): the reference, and the fast
//               kernels for float64 and integers. `a` holds the PointwiseArgs.
//   fast        the vectorizable float32 form the fast kernels use for float32, bfloat16, float16.
//   gradient    d(out)/d(in) applied to g, from the saved input x and output y (ops:: calls).
//
// STRIDER_BINARY_OPS(X): X(Enum, function, signature, kind, dtype_rule, exact, fast)
//   signature   Tensors: f(a, b); TensorOrScalar: also f(a, Scalar b); Alpha: both with alpha
//               (a op alpha * b); None: declared by hand (the *_backward rows: ops:: only, the
//               gradients that would otherwise take several passes, x the incoming gradient).
//               The ops:: functions are generated from it.
//   kind        Arith: the result has the operands' dtype (the differentiable function, with
//               the gradients of two inputs and the scalar overloads, is written by hand);
//               Compare: bool result; Logical: bool result on operands converted to bool.
//               Compare and Logical rows generate their functions in both layers.
//   dtype_rule  Same, or Floating (integers compute in float32).
//   exact       the math on x and y in the op-math type M (for bool operands, arithmetic rows
//               compute as logical and/or, as PyTorch does).
//   fast        the vectorizable float32 form the fast kernels use for float32, bfloat16, float16
//               (the arithmetic rows' exact form, where that already vectorizes).
//
// Enum order is the order of the rows; comparisons and logical ops come last.

#define STRIDER_UNARY_OPS(X)                                                                         \
  X(Neg, neg, Tensor, Plain, SameNotBool, Any, (-x), (-x), (ops::neg(g)))                            \
  X(Abs, abs, Tensor, Plain, Same, Any, (fn::abs_exact(x)), (std::fabs(x)), (ops::mul(g, ops::sign(x)))) \
  X(Exp, exp, Tensor, Plain, Floating, Any, (std::exp(x)), (vmath::exp(x)), (ops::mul(g, y)))        \
  X(Log, log, Tensor, Plain, Floating, Positive, (std::log(x)), (vmath::log(x)), (ops::div(g, x)))   \
  X(Sqrt, sqrt, Tensor, Plain, Floating, Positive, (std::sqrt(x)), (std::sqrt(x)),                   \
    (ops::div(g, ops::mul(y, 2.0))))                                                                 \
  X(Rsqrt, rsqrt, Tensor, Plain, Floating, Positive, (1 / std::sqrt(x)), (1.0f / std::sqrt(x)),      \
    (ops::mul(g, ops::mul(ops::pow(y, 3.0), -0.5))))                                                 \
  X(Relu, relu, Tensor, Plain, SameNotBool, Any, (fn::relu_exact(x)), (fn::relu_exact(x)),           \
    (ops::threshold_backward(g, y)))                                                                 \
  X(Sigmoid, sigmoid, Tensor, Plain, Floating, Any, (1 / (1 + std::exp(-x))), (vmath::sigmoid(x)),   \
    (ops::mul(g, ops::mul(y, ops::rsub(y, 1.0)))))                                                   \
  X(Tanh, tanh, Tensor, Plain, Floating, Any, (std::tanh(x)), (vmath::tanh(x)),                      \
    (ops::mul(g, ops::rsub(ops::mul(y, y), 1.0))))                                                   \
  X(Gelu, gelu, Gelu, Custom, Floating, Any, (0.5 * x * std::erfc(-x * M_SQRT1_2)), (vmath::gelu(x)), ()) \
  X(GeluTanh, gelu_tanh, None, Custom, Floating, Any, (fn::gelu_tanh_exact(x)), (fn::gelu_tanh_fast(x)), ()) \
  X(Clamp, clamp, Clamp, Custom, Same, Any, (fn::clamp_exact(x, a)), (fn::clamp_exact(x, a)), ())    \
  X(PowScalar, pow, Exponent, Custom, Floating, Positive, (std::pow(x, static_cast<M>(a.exponent))), \
    (std::pow(x, static_cast<float>(a.exponent))), ())                                               \
  X(Reciprocal, reciprocal, Tensor, Plain, Floating, Positive, (1 / x), (1.0f / x),                  \
    (ops::neg(ops::mul(g, ops::mul(y, y)))))                                                         \
  X(Sign, sign, Tensor, Plain, SameNotBool, Any, ((M(0) < x) - (x < M(0))), ((0.0f < x) - (x < 0.0f)), \
    (ops::mul(g, 0.0)))                                                                              \
  X(LogicalNot, logical_not, Tensor, NoGrad, Bool, Any, (!x), (!x), ())                              \
  X(Erf, erf, Tensor, Plain, Floating, Any, (std::erf(x)), (vmath::erf(x)),                          \
    (ops::mul(g, ops::mul(ops::exp(ops::mul(ops::mul(x, x), -1.0)), 1.1283791670955126))))            \
  X(Silu, silu, Tensor, Plain, Floating, Any, (x / (1 + std::exp(-x))), (x * vmath::sigmoid(x)),       \
    (ops::silu_backward(g, x)))                                                                      \
  X(LeakyRelu, leaky_relu, Slope, Custom, Floating, Any, (x > M(0) ? x : x * static_cast<M>(a.alpha)),  \
    (x > 0.0f ? x : x * static_cast<float>(a.alpha)), ())                                             \
  X(Elu, elu, Elu, Custom, Floating, Any, (fn::elu_exact(x, a)), (fn::elu_exact(x, a)), ())           \
  X(Selu, selu, Tensor, Plain, Floating, Any, (fn::elu_exact(x, selu_args())),                       \
    (fn::elu_exact(x, selu_args())), (ops::selu_backward(g, x)))                                     \
  X(Softplus, softplus, Softplus, Custom, Floating, Any, (fn::softplus_exact(x, a)),                  \
    (fn::softplus_exact(x, a)), ())                                                                   \
  X(Hardswish, hardswish, Tensor, Plain, Floating, Any, (x * fn::relu6_exact(x + M(3)) / M(6)),      \
    (x * fn::relu6_exact(x + 3.0f) / 6.0f), (ops::hardswish_backward(g, x)))                         \
  X(Hardsigmoid, hardsigmoid, Tensor, Plain, Floating, Any, (fn::relu6_exact(x + M(3)) / M(6)),      \
    (fn::relu6_exact(x + 3.0f) / 6.0f), (ops::hardsigmoid_backward(g, x)))                           \
  X(Mish, mish, Tensor, Plain, Floating, Any, (x * std::tanh(std::log1p(std::exp(x)))),              \
    (x * std::tanh(std::log1p(std::exp(x)))), (ops::mish_backward(g, x)))

#define STRIDER_BINARY_OPS(X)                                                                        \
  X(Add, add, Alpha, Arith, Same, (x + static_cast<M>(a.alpha) * y), (x + static_cast<M>(a.alpha) * y)) \
  X(Sub, sub, Alpha, Arith, Same, (x - static_cast<M>(a.alpha) * y), (x - static_cast<M>(a.alpha) * y)) \
  X(Mul, mul, TensorOrScalar, Arith, Same, (x * y), (x * y))                                         \
  X(Div, div, TensorOrScalar, Arith, Floating, (fn::div_exact(x, y)), (fn::div_exact(x, y)))         \
  X(Pow, pow, Tensors, Arith, Same, (fn::pow_exact(x, y)), (std::pow(x, y)))                          \
  X(Maximum, maximum, Tensors, Arith, Same, (fn::maximum_exact(x, y)), (fn::maximum_exact(x, y)))    \
  X(Minimum, minimum, Tensors, Arith, Same, (fn::minimum_exact(x, y)), (fn::minimum_exact(x, y)))    \
  X(ThresholdBackward, threshold_backward, None, Arith, Same, (y > M(0) ? x : M(0)), (y > 0.0f ? x : 0.0f)) \
  X(GeluBackward, gelu_backward, None, Arith, Floating, (fn::gelu_backward_exact(x, y)),             \
    (vmath::gelu_backward(x, y)))                                                                    \
  X(GeluTanhBackward, gelu_tanh_backward, None, Arith, Floating, (fn::gelu_tanh_backward_exact(x, y)), \
    (vmath::gelu_tanh_backward(x, y)))                                                               \
  X(SiluBackward, silu_backward, None, Arith, Floating, (fn::silu_backward_exact(x, y)),             \
    (vmath::silu_backward(x, y)))                                                                    \
  X(LeakyReluBackward, leaky_relu_backward, None, Arith, Floating,                                   \
    (x > M(0) ? y : y * static_cast<M>(a.alpha)), (x > 0.0f ? y : y * static_cast<float>(a.alpha)))  \
  X(EluBackward, elu_backward, None, Arith, Floating, (fn::elu_backward_exact(x, y, a)),             \
    (fn::elu_backward_exact(x, y, a)))                                                               \
  X(SoftplusBackward, softplus_backward, None, Arith, Floating, (fn::softplus_backward_exact(x, y, a)), \
    (fn::softplus_backward_exact(x, y, a)))                                                          \
  X(HardtanhBackward, hardtanh_backward, None, Arith, Floating,                                      \
    (y <= static_cast<M>(a.lo) || y >= static_cast<M>(a.hi) ? M(0) : x),                             \
    (y <= static_cast<float>(a.lo) || y >= static_cast<float>(a.hi) ? 0.0f : x))                     \
  X(HardswishBackward, hardswish_backward, None, Arith, Floating, (fn::hardswish_backward_exact(x, y)), \
    (fn::hardswish_backward_exact(x, y)))                                                            \
  X(HardsigmoidBackward, hardsigmoid_backward, None, Arith, Floating,                                \
    (y > M(-3) && y < M(3) ? x * static_cast<M>(1.0f / 6.0f) : M(0)),                                \
    (y > -3.0f && y < 3.0f ? x * (1.0f / 6.0f) : 0.0f))                                              \
  X(MishBackward, mish_backward, None, Arith, Floating, (fn::mish_backward_exact(x, y)),             \
    (fn::mish_backward_exact(x, y)))                                                                  \
  X(Eq, eq, TensorOrScalar, Compare, Same, (x == y), (x == y))                                       \
  X(Ne, ne, TensorOrScalar, Compare, Same, (x != y), (x != y))                                       \
  X(Lt, lt, TensorOrScalar, Compare, Same, (x < y), (x < y))                                         \
  X(Le, le, TensorOrScalar, Compare, Same, (x <= y), (x <= y))                                       \
  X(Gt, gt, TensorOrScalar, Compare, Same, (x > y), (x > y))                                         \
  X(Ge, ge, TensorOrScalar, Compare, Same, (x >= y), (x >= y))                                       \
  X(LogicalAnd, logical_and, Tensors, Logical, Same, (x && y), (x && y))                             \
  X(LogicalOr, logical_or, Tensors, Logical, Same, (x || y), (x || y))

// The public declarations of a row, in the namespace of the header that expands
// STRIDER_UNARY_OPS(STRIDER_DECLARE_POINTWISE) and STRIDER_BINARY_OPS(STRIDER_DECLARE_POINTWISE)
// (strider::ops in ops/pointwise.h, strider in autograd/functions.h). Needs core/tensor.h,
// <optional> and <string_view>.
#define STRIDER_DECLARE_POINTWISE(Enum, function, signature, ...) STRIDER_POINTWISE_SIGNATURE_##signature(function)
#define STRIDER_POINTWISE_SIGNATURE_Tensor(f) Tensor f(const Tensor& a);
#define STRIDER_POINTWISE_SIGNATURE_Exponent(f) Tensor f(const Tensor& a, const Scalar& exponent);
#define STRIDER_POINTWISE_SIGNATURE_Gelu(f) Tensor f(const Tensor& a, std::string_view approximate = "none");
#define STRIDER_POINTWISE_SIGNATURE_Clamp(f) \
  Tensor f(const Tensor& a, std::optional<Scalar> min, std::optional<Scalar> max);
#define STRIDER_POINTWISE_SIGNATURE_Slope(f) Tensor f(const Tensor& a, double negative_slope = 0.01);
#define STRIDER_POINTWISE_SIGNATURE_Elu(f) Tensor f(const Tensor& a, double alpha = 1.0);
#define STRIDER_POINTWISE_SIGNATURE_Softplus(f) Tensor f(const Tensor& a, double beta = 1.0, double threshold = 20.0);
#define STRIDER_POINTWISE_SIGNATURE_Tensors(f) Tensor f(const Tensor& a, const Tensor& b);
#define STRIDER_POINTWISE_SIGNATURE_TensorOrScalar(f) \
  Tensor f(const Tensor& a, const Tensor& b);         \
  Tensor f(const Tensor& a, const Scalar& b);
#define STRIDER_POINTWISE_SIGNATURE_Alpha(f)                        \
  Tensor f(const Tensor& a, const Tensor& b, const Scalar& alpha = 1); \
  Tensor f(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
#define STRIDER_POINTWISE_SIGNATURE_None(f)
