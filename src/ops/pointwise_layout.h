#pragma once
// The layout decision for elementwise ops (PyTorch's TensorIterator, SPEC §8): type promotion
// over tensors, 0-d tensors and wrapped numbers, broadcasting, the fast paths and the general
// ordering path. This is the one place pointwise output strides are decided.
#include <initializer_list>
#include <span>
#include <vector>

#include "strider/core/tensor.h"

namespace strider::ops {

// An input of an elementwise op. `wrapped` marks a number the user passed as a Scalar (`x + 1.5`),
// which is a 0-d tensor that only decides the dtype when no tensor outranks its category.
struct PointwiseInput {
  Tensor tensor;
  bool wrapped = false;
};

// torch.result_type over the inputs.
ScalarType result_type(std::span<const PointwiseInput> inputs);
inline ScalarType result_type(std::initializer_list<PointwiseInput> inputs) {
  return result_type(std::span<const PointwiseInput>(inputs.begin(), inputs.size()));
}

// Output shape and strides for a functional call on (already dtype-promoted) inputs.
struct OutputGeometry {
  DimVector sizes;
  DimVector strides;
};
OutputGeometry pointwise_output_geometry(std::span<const Tensor* const> inputs, const char* op);

// Whether `from` can be written into a tensor of type `to` by an in-place op.
bool can_cast(ScalarType from, ScalarType to);

}  // namespace strider::ops
