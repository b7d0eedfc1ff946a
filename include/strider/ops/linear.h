#pragma once
// Matrix products without autograd. Outputs are contiguous (SPEC §13). oneDNN runs float32 and
// bfloat16; other floating dtypes use the reference kernel.
#include "strider/core/tensor.h"

namespace strider::ops {

// x [..., in] @ weight[out, in]^T + bias[out] -> [..., out].
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);
// PyTorch's matmul: 1-d/2-d products and batched products with broadcast batch dims.
Tensor matmul(const Tensor& a, const Tensor& b);
// [B, M, K] @ [B, K, N] -> [B, M, N].
Tensor bmm(const Tensor& a, const Tensor& b);
// [M, K] @ [K, N] -> [M, N] (either operand may be a transposed view).
Tensor mm(const Tensor& a, const Tensor& b);

}  // namespace strider::ops
