#pragma once
// Gradient buffers: a leaf whose gradient lives in memory its owner laid out (FSDP's flat
// gradient buffer, which its reduce-scatter reads as it is), instead of a tensor of its own.
#include "strider/core/tensor.h"

namespace strider::autograd {

// From now on the gradients of `leaf` (a leaf that requires grad) accumulate in `buffer`, a
// tensor of the leaf's shape, dtype and strides (usually a view into a larger buffer):
//  - a backward that finds no .grad() writes its gradient into `buffer` (a copy, in the leaf's
//    layout: the bits the gradient had) and makes `buffer` the leaf's .grad();
//  - one that finds .grad() is `buffer` adds into it in place, as PyTorch accumulates, so a
//    tensor taken from .grad() earlier sees the sum;
//  - a .grad() set to anything else accumulates as always (out of place, into a new tensor).
// An undefined `buffer` ends it (the leaf's .grad() is left as it is; never throws). Throws when
// `leaf` is not a leaf that requires grad, or `buffer` differs from it in shape, strides or dtype.
void set_grad_buffer(const Tensor& leaf, const Tensor& buffer);
// The buffer set_grad_buffer gave `leaf` (undefined when none).
const Tensor& grad_buffer(const Tensor& leaf);

}  // namespace strider::autograd
