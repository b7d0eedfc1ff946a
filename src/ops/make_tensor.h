#pragma once
// Allocation with decided geometry: every op that creates a tensor ends here.
#include "strider/core/tensor.h"

namespace strider::ops {

// Elements the storage must hold for (sizes, strides) starting at offset 0.
int64_t storage_span(IntArrayRef sizes, IntArrayRef strides);

Tensor make_tensor(DimVector sizes, DimVector strides, ScalarType dtype, Allocator& allocator = cpu_allocator());

// `t` made dense in `fmt` and described with `fmt`'s formula strides, size-1 dims included: the
// same bytes, but a kernel library sees one unambiguous layout (an N1HW tensor dense in NHWC
// order would otherwise carry NCHW strides and send oneDNN to its reference kernels).
Tensor dense_in_format(const Tensor& t, MemoryFormat fmt);

}  // namespace strider::ops
