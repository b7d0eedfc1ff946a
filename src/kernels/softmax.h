#pragma once
// softmax / log_softmax along one dimension of a contiguous tensor into a contiguous output.
// The ordered list: cpu (vectorized, parallel), then ref.
#include "kernels/implementation_list.h"
#include "strider/core/tensor.h"

namespace strider::kernels {

struct SoftmaxProblem {
  Tensor out, in;
  int64_t dim = 0;
  bool log = false;
};
const ImplementationList<SoftmaxProblem>& softmax_implementations();
void softmax(const SoftmaxProblem& problem, const Dispatch& d);

namespace cpu {
void softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log);
}
namespace ref {
void softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log);
}
}  // namespace strider::kernels
