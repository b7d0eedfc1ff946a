#pragma once
// Tensors a kernel creates for itself (oneDNN workspaces, max-pooling indices, gradients nobody
// asked for), from strider's allocator so memory_stats() counts them.
#include "strider/core/tensor.h"

namespace strider::kernels {

// A fresh tensor of `dtype` with `like`'s sizes and strides (`like` must be non-overlapping).
Tensor scratch_like(const Tensor& like, ScalarType dtype);
// A fresh tensor with these sizes and (non-overlapping) strides.
Tensor scratch_strided(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype);
// A fresh dense (row-major) tensor with t's sizes and dtype.
Tensor scratch_like(const Tensor& t);
// `bytes` bytes as a 1-d byte tensor.
Tensor scratch_bytes(int64_t bytes);

// The scratchpad bytes this thread's last oneDNN primitive was given (tests check that
// memory_stats() saw them).
int64_t last_onednn_scratchpad_bytes();

}  // namespace strider::kernels
