#include "kernels/pointwise.h"

namespace strider::kernels {

const char* name(UnaryOp op) {
  static const char* names[] = {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "relu", "sigmoid",
                                "tanh", "gelu", "gelu_tanh", "clamp", "pow", "reciprocal",
                                "sign", "logical_not", "erf"};
  return names[static_cast<int>(op)];
}

const char* name(BinaryOp op) {
  static const char* names[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "threshold_backward", "eq",
                                "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"};
  return names[static_cast<int>(op)];
}

bool is_comparison(BinaryOp op) {
  return op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::Lt || op == BinaryOp::Le ||
         op == BinaryOp::Gt || op == BinaryOp::Ge || op == BinaryOp::LogicalAnd ||
         op == BinaryOp::LogicalOr;
}

}  // namespace strider::kernels
