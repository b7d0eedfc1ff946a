#pragma once
// Which ops need a floating-point compute type; the ops layer promotes integers before calling.
#include "kernels/pointwise.h"

namespace strider::kernels {

constexpr bool needs_floating(UnaryOp op) {
  switch (op) {
    case UnaryOp::Exp: case UnaryOp::Log: case UnaryOp::Sqrt: case UnaryOp::Rsqrt:
    case UnaryOp::Sigmoid: case UnaryOp::Tanh: case UnaryOp::Gelu: case UnaryOp::GeluTanh:
    case UnaryOp::Reciprocal: case UnaryOp::PowScalar: case UnaryOp::Erf:
      return true;
    default:
      return false;
  }
}

constexpr bool needs_floating(BinaryOp op) { return op == BinaryOp::Div || op == BinaryOp::Pow; }

}  // namespace strider::kernels
