#include "kernels/scratch.h"

#include "core/make_tensor.h"
#include "strider/core/layout.h"

namespace strider::kernels {
namespace {

Tensor allocate(DimVector sizes, DimVector strides, ScalarType dtype) {
  return make_tensor(std::move(sizes), std::move(strides), dtype);
}

}  // namespace

Tensor scratch_like(const Tensor& like, ScalarType dtype) {
  return allocate(like.sizes().vec(), like.strides().vec(), dtype);
}

Tensor scratch_strided(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype) {
  return allocate(sizes.vec(), strides.vec(), dtype);
}

Tensor scratch_like(const Tensor& t) {
  return allocate(t.sizes().vec(), layout::contiguous_strides(t.sizes()), t.dtype());
}

Tensor scratch_bytes(int64_t bytes) { return allocate({bytes}, {1}, kByte); }

}  // namespace strider::kernels
