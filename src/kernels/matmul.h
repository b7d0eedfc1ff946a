#pragma once
// Batched matrix multiply: out[b] = a[b] @ w[b] (+ bias), for 2-d or 3-d tensors with any strides
// (a transposed operand is just swapped strides). A batch of 1 in a or w broadcasts.
#include "strider/core/tensor.h"

namespace strider::kernels {
namespace dnnl_ops {
// bias (optional) has shape [N] and is added to every row.
void matmul(const Tensor& out, const Tensor& a, const Tensor& w, const Tensor& bias);
}
namespace ref {
void matmul(const Tensor& out, const Tensor& a, const Tensor& w, const Tensor& bias);
}
}  // namespace strider::kernels
