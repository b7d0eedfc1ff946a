#pragma once
// Gathering along a dimension without autograd (strider::index_select is the differentiable form).
#include "strider/core/tensor.h"

namespace strider::ops {

// out.select(dim, i) = self.select(dim, index[i]); index is int64 or int32, 1-d. The output is
// contiguous, as PyTorch's.
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index);
// The adjoint: out (zeros of `sizes`) accumulates src.select(dim, i) into out.select(dim, index[i]);
// src must be `sizes` with dim `dim` the index's length.
Tensor index_add_into(IntArrayRef sizes, int64_t dim, const Tensor& index, const Tensor& src);

}  // namespace strider::ops
