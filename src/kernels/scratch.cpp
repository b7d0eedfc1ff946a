#include "kernels/scratch.h"

#include "strider/core/layout.h"

namespace strider::kernels {
namespace {

Tensor allocate(DimVector sizes, DimVector strides, ScalarType dtype) {
  int64_t span = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) span = 0;
    if (span) span += (sizes[d] - 1) * strides[d];
  }
  auto storage = std::make_shared<StorageImpl>(static_cast<size_t>(span) * element_size(dtype), cpu_allocator());
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), dtype, std::move(sizes), std::move(strides), 0));
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
