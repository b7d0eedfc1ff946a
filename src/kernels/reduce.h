#pragma once
// Reductions over a set of dimensions. `out` is passed with the input's rank and shape, with
// stride 0 along every reduced dimension (a keepdim view of the real output), so the kernel
// sees which dimensions reduce from the strides alone.
#include "kernels/implementation_list.h"
#include "strider/core/reduce_table.h"
#include "strider/core/tensor.h"

namespace strider::kernels {

// The rows of core/reduce_table.h.
#define STRIDER_ENUM_ENTRY(Enum, ...) Enum,
enum class ReduceOp { STRIDER_REDUCE_OPS(STRIDER_ENUM_ENTRY) };
#undef STRIDER_ENUM_ENTRY

// What a row gathers per output (its accumulate column).
enum class Accumulate { Sum, Centered, Prod, Max, Min };
constexpr Accumulate accumulation(ReduceOp op) {
#define STRIDER_ACCUMULATE(Enum, function, name, signature, rule, empty, accumulate, ...) \
  if (op == ReduceOp::Enum) return Accumulate::accumulate;
  STRIDER_REDUCE_OPS(STRIDER_ACCUMULATE)
#undef STRIDER_ACCUMULATE
  return Accumulate::Sum;
}

struct ReduceArgs {
  int64_t correction = 1;  // Var: divide by L - correction
};

const char* name(ReduceOp op);

struct ReduceProblem {
  ReduceOp op;
  Tensor out, in;
  ReduceArgs args;
};
// The ordered list: cpu (vectorized, parallel), then ref.
const ImplementationList<ReduceProblem>& reduce_implementations();
void reduce(const ReduceProblem& problem, const Dispatch& d);

namespace cpu {
void reduce(ReduceOp op, const Tensor& out, const Tensor& in, const ReduceArgs& args);
}
namespace ref {
void reduce(ReduceOp op, const Tensor& out, const Tensor& in, const ReduceArgs& args);
}

}  // namespace strider::kernels
