#pragma once
// The elementwise ops, defined once. Every layer expands these lists with its own X to get what
// it needs: the kernels their enum, names, dtype rules, compile-time dispatch and math; the ops
// layer the plain ops' functions; autograd their gradients; the tests their conformance and
// gradient-check lists. Adding a plain op with its gradient touches this table and the two
// public headers that declare it (include/strider/ops/pointwise.h, strider/autograd/functions.h).
//
// STRIDER_UNARY_OPS(X): X(Enum, function, kind, dtype_rule, domain, exact, fast, gradient)
//   kind        Plain: ops:: and the differentiable function are generated from this row;
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
// STRIDER_BINARY_OPS(X): X(Enum, function, kind, dtype_rule, exact)
//   kind        Arith: the result has the operands' dtype (functions written by hand: scalar
//               overloads, alpha, gradients of two inputs); Compare: bool result, Tensor and
//               Scalar right-hand sides generated; Logical: bool result on bool operands.
//   dtype_rule  Same, or Floating (integers compute in float32).
//   exact       the math on x and y in the op-math type M (for bool operands, arithmetic rows
//               compute as logical and/or, as PyTorch does).
//
// Enum order is the order of the rows; comparisons and logical ops come last.

#define STRIDER_UNARY_OPS(X)                                                                         \
  X(Neg, neg, Plain, SameNotBool, Any, (-x), (-x), (ops::neg(g)))                                    \
  X(Abs, abs, Plain, Same, Any, (fn::abs_exact(x)), (std::fabs(x)), (ops::mul(g, ops::sign(x))))     \
  X(Exp, exp, Plain, Floating, Any, (std::exp(x)), (vmath::exp(x)), (ops::mul(g, y)))                \
  X(Log, log, Plain, Floating, Positive, (std::log(x)), (vmath::log(x)), (ops::div(g, x)))           \
  X(Sqrt, sqrt, Plain, Floating, Positive, (std::sqrt(x)), (std::sqrt(x)),                           \
    (ops::div(g, ops::mul(y, 2.0))))                                                                 \
  X(Rsqrt, rsqrt, Plain, Floating, Positive, (1 / std::sqrt(x)), (1.0f / std::sqrt(x)),              \
    (ops::mul(g, ops::mul(ops::pow(y, 3.0), -0.5))))                                                 \
  X(Relu, relu, Plain, SameNotBool, Any, (fn::relu_exact(x)), (fn::relu_exact(x)),                   \
    (ops::threshold_backward(g, y)))                                                                 \
  X(Sigmoid, sigmoid, Plain, Floating, Any, (1 / (1 + std::exp(-x))), (vmath::sigmoid(x)),           \
    (ops::mul(g, ops::mul(y, ops::rsub(y, 1.0)))))                                                   \
  X(Tanh, tanh, Plain, Floating, Any, (std::tanh(x)), (vmath::tanh(x)),                              \
    (ops::mul(g, ops::rsub(ops::mul(y, y), 1.0))))                                                   \
  X(Gelu, gelu, Custom, Floating, Any, (0.5 * x * std::erfc(-x * M_SQRT1_2)), (vmath::gelu(x)), ())  \
  X(GeluTanh, gelu_tanh, Custom, Floating, Any, (fn::gelu_tanh_exact(x)), (fn::gelu_tanh_fast(x)), ()) \
  X(Clamp, clamp, Custom, Same, Any, (fn::clamp_exact(x, a)), (fn::clamp_exact(x, a)), ())           \
  X(PowScalar, pow, Custom, Floating, Positive, (std::pow(x, static_cast<M>(a.exponent))),    \
    (std::pow(x, static_cast<float>(a.exponent))), ())                                               \
  X(Reciprocal, reciprocal, Plain, Floating, Positive, (1 / x), (1.0f / x),                          \
    (ops::neg(ops::mul(g, ops::mul(y, y)))))                                                         \
  X(Sign, sign, Plain, SameNotBool, Any, ((M(0) < x) - (x < M(0))), ((0.0f < x) - (x < 0.0f)),       \
    (ops::mul(g, 0.0)))                                                                              \
  X(LogicalNot, logical_not, NoGrad, Bool, Any, (!x), (!x), ())                                      \
  X(Erf, erf, Plain, Floating, Any, (std::erf(x)), (vmath::erf(x)),                                  \
    (ops::mul(g, ops::mul(ops::exp(ops::mul(ops::mul(x, x), -1.0)), 1.1283791670955126))))            \
  X(Silu, silu, Plain, Floating, Any, (x / (1 + std::exp(-x))), (x * vmath::sigmoid(x)),               \
    (ops::mul(g, ops::mul(ops::sigmoid(x), ops::add(ops::mul(x, ops::rsub(ops::sigmoid(x), 1.0)), 1.0)))))

#define STRIDER_BINARY_OPS(X)                                                                        \
  X(Add, add, Arith, Same, (x + static_cast<M>(a.alpha) * y))                                        \
  X(Sub, sub, Arith, Same, (x - static_cast<M>(a.alpha) * y))                                        \
  X(Mul, mul, Arith, Same, (x * y))                                                                  \
  X(Div, div, Arith, Floating, (fn::div_exact(x, y)))                                                \
  X(Pow, pow, Arith, Floating, (std::pow(x, y)))                                                     \
  X(Maximum, maximum, Arith, Same, (fn::maximum_exact(x, y)))                                        \
  X(Minimum, minimum, Arith, Same, (fn::minimum_exact(x, y)))                                        \
  X(ThresholdBackward, threshold_backward, Arith, Same, (y > M(0) ? x : M(0)))                       \
  X(Eq, eq, Compare, Same, (x == y))                                                                 \
  X(Ne, ne, Compare, Same, (x != y))                                                                 \
  X(Lt, lt, Compare, Same, (x < y))                                                                  \
  X(Le, le, Compare, Same, (x <= y))                                                                 \
  X(Gt, gt, Compare, Same, (x > y))                                                                  \
  X(Ge, ge, Compare, Same, (x >= y))                                                                 \
  X(LogicalAnd, logical_and, Logical, Same, (x && y))                                                \
  X(LogicalOr, logical_or, Logical, Same, (x || y))
