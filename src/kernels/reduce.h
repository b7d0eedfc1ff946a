#pragma once
// Reductions over a set of dimensions. `out` is passed with the input's rank and shape, with
// stride 0 along every reduced dimension (a keepdim view of the real output), so the kernel
// sees which dimensions reduce from the strides alone.
#include "kernels/implementation_list.h"
#include "strider/core/tensor.h"

namespace strider::kernels {

enum class ReduceOp { Sum, Mean, Prod, Max, Min, Argmax, Argmin, Var };

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
