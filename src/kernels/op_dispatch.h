#pragma once
// Turns a runtime op enum into a compile-time constant, so each op gets its own inner loop and
// the compiler folds the op's switch away (vectorizing what remains). The cases are the rows of
// core/pointwise_table.h.
#include "kernels/isa_namespace.h"
#include "kernels/pointwise.h"

namespace strider::kernels {
inline namespace STRIDER_ISA_NAMESPACE {

template <class F>
void dispatch_unary_op(UnaryOp op, F&& f) {
#define STRIDER_CASE(Enum, ...) \
  case UnaryOp::Enum: f.template operator()<UnaryOp::Enum>(); return;
  switch (op) { STRIDER_UNARY_OPS(STRIDER_CASE) }
#undef STRIDER_CASE
}

template <class F>
void dispatch_binary_op(BinaryOp op, F&& f) {
#define STRIDER_CASE(Enum, ...) \
  case BinaryOp::Enum: f.template operator()<BinaryOp::Enum>(); return;
  switch (op) { STRIDER_BINARY_OPS(STRIDER_CASE) }
#undef STRIDER_CASE
}

}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels
