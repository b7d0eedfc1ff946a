#pragma once
// Allocation with decided geometry: every op that creates a tensor ends here.
#include "strider/core/tensor.h"

namespace strider::ops {

// Elements the storage must hold for (sizes, strides) starting at offset 0.
int64_t storage_span(IntArrayRef sizes, IntArrayRef strides);

Tensor make_tensor(DimVector sizes, DimVector strides, ScalarType dtype);

}  // namespace strider::ops
