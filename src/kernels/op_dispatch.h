#pragma once
// Turns a runtime op enum into a compile-time constant, so each op gets its own inner loop and
// the compiler folds the op's switch away (vectorizing what remains).
#include <type_traits>

#include "kernels/pointwise.h"

namespace strider::kernels {

template <class F>
void dispatch_unary_op(UnaryOp op, F&& f) {
#define STRIDER_CASE(X) \
  case UnaryOp::X: f.template operator()<UnaryOp::X>(); return;
  switch (op) {
    STRIDER_CASE(Neg) STRIDER_CASE(Abs) STRIDER_CASE(Exp) STRIDER_CASE(Log) STRIDER_CASE(Sqrt)
    STRIDER_CASE(Rsqrt) STRIDER_CASE(Relu) STRIDER_CASE(Sigmoid) STRIDER_CASE(Tanh)
    STRIDER_CASE(Gelu) STRIDER_CASE(GeluTanh) STRIDER_CASE(Clamp) STRIDER_CASE(PowScalar)
    STRIDER_CASE(Reciprocal) STRIDER_CASE(Sign) STRIDER_CASE(LogicalNot) STRIDER_CASE(Erf)
  }
#undef STRIDER_CASE
}

template <class F>
void dispatch_binary_op(BinaryOp op, F&& f) {
#define STRIDER_CASE(X) \
  case BinaryOp::X: f.template operator()<BinaryOp::X>(); return;
  switch (op) {
    STRIDER_CASE(Add) STRIDER_CASE(Sub) STRIDER_CASE(Mul) STRIDER_CASE(Div) STRIDER_CASE(Pow)
    STRIDER_CASE(Maximum) STRIDER_CASE(Minimum) STRIDER_CASE(ThresholdBackward) STRIDER_CASE(Eq) STRIDER_CASE(Ne)
    STRIDER_CASE(Lt) STRIDER_CASE(Le) STRIDER_CASE(Gt) STRIDER_CASE(Ge)
    STRIDER_CASE(LogicalAnd) STRIDER_CASE(LogicalOr)
  }
#undef STRIDER_CASE
}

}  // namespace strider::kernels
