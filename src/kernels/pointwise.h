#pragma once
// Elementwise kernels. The ops layer has already decided the output's layout, promoted the
// inputs to one compute dtype and broadcast them to the output's shape (stride 0 where
// expanded); a kernel only computes. Each computation has an ordered implementation list:
//   cpu::  vectorized (omp simd, AVX2/AVX-512 through vec_math) and OpenMP-parallel;
//   ref::  a naive index walk with <cmath>, the oracle the fast kernels are tested against.
#include <cmath>

#include "kernels/implementation_list.h"
#include "strider/core/pointwise_table.h"
#include "strider/core/tensor.h"

namespace strider::kernels {

// The rows of core/pointwise_table.h.
#define STRIDER_ENUM_ENTRY(Enum, ...) Enum,
enum class UnaryOp { STRIDER_UNARY_OPS(STRIDER_ENUM_ENTRY) };
enum class BinaryOp { STRIDER_BINARY_OPS(STRIDER_ENUM_ENTRY) };
#undef STRIDER_ENUM_ENTRY

// Extra arguments: alpha for Add/Sub; lo/hi for Clamp (NaN = no bound); exponent for PowScalar.
struct PointwiseArgs {
  double alpha = 1.0;  // add/sub's alpha, leaky_relu's negative slope, elu's alpha
  double lo = NAN;
  double hi = NAN;
  double exponent = 1.0;
  double scale = 1.0;        // elu's scale (selu's 1.0507...)
  double input_scale = 1.0;  // elu's input scale
  double beta = 1.0;         // softplus
  double threshold = 20.0;   // softplus: above it, the identity
};

// selu is elu with PyTorch's fixed alpha and scale.
inline PointwiseArgs selu_args() {
  PointwiseArgs a;
  a.alpha = 1.6732632423543772848170429916717;
  a.scale = 1.0507009873554804934193349852946;
  return a;
}

const char* name(UnaryOp op);
const char* name(BinaryOp op);

// The table's dtype rules (the ops layer promotes integers before calling a kernel).
enum class DtypeRule { Same, SameNotBool, Floating, Bool };
enum class BinaryKind { Arith, Compare, Logical };

constexpr DtypeRule dtype_rule(UnaryOp op) {
#define STRIDER_RULE(Enum, fn, signature, kind, rule, ...) \
  if (op == UnaryOp::Enum) return DtypeRule::rule;
  STRIDER_UNARY_OPS(STRIDER_RULE)
#undef STRIDER_RULE
  return DtypeRule::Same;
}
constexpr DtypeRule dtype_rule(BinaryOp op) {
#define STRIDER_RULE(Enum, fn, signature, kind, rule, ...) \
  if (op == BinaryOp::Enum) return DtypeRule::rule;
  STRIDER_BINARY_OPS(STRIDER_RULE)
#undef STRIDER_RULE
  return DtypeRule::Same;
}
constexpr BinaryKind kind(BinaryOp op) {
#define STRIDER_KIND(Enum, fn, signature, k, ...) \
  if (op == BinaryOp::Enum) return BinaryKind::k;
  STRIDER_BINARY_OPS(STRIDER_KIND)
#undef STRIDER_KIND
  return BinaryKind::Arith;
}
// Integers compute in float32 for these.
constexpr bool needs_floating(UnaryOp op) { return dtype_rule(op) == DtypeRule::Floating; }
constexpr bool needs_floating(BinaryOp op) { return dtype_rule(op) == DtypeRule::Floating; }
// Comparisons and logical ops write bool.
constexpr bool is_comparison(BinaryOp op) { return kind(op) != BinaryKind::Arith; }

struct UnaryProblem {
  UnaryOp op;
  Tensor out, in;
  PointwiseArgs args;
};
struct BinaryProblem {
  BinaryOp op;
  Tensor out, a, b;
  PointwiseArgs args;
};
struct WhereProblem {
  Tensor out, cond, x, y;
};
struct AddcmulProblem {
  Tensor out, self, t1, t2;
  double value = 1.0;
};

const ImplementationList<UnaryProblem>& unary_implementations();
const ImplementationList<BinaryProblem>& binary_implementations();
const ImplementationList<WhereProblem>& where_implementations();
const ImplementationList<AddcmulProblem>& addcmul_implementations();

void unary(const UnaryProblem& problem, const Dispatch& d);
void binary(const BinaryProblem& problem, const Dispatch& d);
void where(const WhereProblem& problem, const Dispatch& d);
void addcmul(const AddcmulProblem& problem, const Dispatch& d);

namespace cpu {
// out and in have out's shape and in's dtype equals out's except for LogicalNot (bool out).
void unary(UnaryOp op, const Tensor& out, const Tensor& in, const PointwiseArgs& args);
// a and b share a dtype; out has it too, or bool for comparisons and logical ops.
void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
            const PointwiseArgs& args);
// out = cond ? x : y (cond bool; x, y, out one dtype).
void where(const Tensor& out, const Tensor& cond, const Tensor& x, const Tensor& y);
// out = self + value * t1 * t2.
void addcmul(const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
             double value);
}  // namespace cpu

namespace ref {
void unary(UnaryOp op, const Tensor& out, const Tensor& in, const PointwiseArgs& args);
void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
            const PointwiseArgs& args);
void where(const Tensor& out, const Tensor& cond, const Tensor& x, const Tensor& y);
void addcmul(const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
             double value);
}  // namespace ref

}  // namespace strider::kernels
