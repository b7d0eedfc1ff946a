#pragma once
// softmax / log_softmax along one dimension of a contiguous tensor into a contiguous output.
#include "strider/core/tensor.h"

namespace strider::kernels {
namespace cpu {
void softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log);
}
namespace ref {
void softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log);
}
}  // namespace strider::kernels
