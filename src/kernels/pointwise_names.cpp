#include "kernels/pointwise.h"

namespace strider::kernels {

#define STRIDER_NAME(Enum, function, ...) #function,

const char* name(UnaryOp op) {
  static const char* names[] = {STRIDER_UNARY_OPS(STRIDER_NAME)};
  return names[static_cast<int>(op)];
}

const char* name(BinaryOp op) {
  static const char* names[] = {STRIDER_BINARY_OPS(STRIDER_NAME)};
  return names[static_cast<int>(op)];
}

#undef STRIDER_NAME

}  // namespace strider::kernels
