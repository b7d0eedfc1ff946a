#include "core/make_tensor.h"

#include "strider/core/error.h"

namespace strider {

int64_t storage_span(IntArrayRef sizes, IntArrayRef strides) {
  int64_t span = 1;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] == 0) return 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    int64_t reach = 0;
    STRIDER_CHECK(!__builtin_mul_overflow(sizes[d] - 1, strides[d], &reach) && !__builtin_add_overflow(span, reach, &span),
                  "empty_strided", "size ", sizes, " with strides ", strides, " spans more elements than fit in 64 bits");
  }
  return span;
}

Tensor make_tensor(DimVector sizes, DimVector strides, ScalarType dtype, Allocator& allocator) {
  checked_numel(sizes, "empty");
  for (int64_t s : strides)
    STRIDER_CHECK(s >= 0, "empty_strided", "negative stride in ", IntArrayRef(strides),
                  "; strides must be >= 0");
  const int64_t span = storage_span(sizes, strides);
  int64_t bytes = 0;
  STRIDER_CHECK(!__builtin_mul_overflow(span, static_cast<int64_t>(element_size(dtype)), &bytes), "empty", "size ",
                IntArrayRef(sizes), " of ", dtype, " needs more bytes than fit in 64 bits");
  auto storage = std::make_shared<StorageImpl>(static_cast<size_t>(bytes), allocator);
  return make_tensor(std::move(storage), dtype, std::move(sizes), std::move(strides), 0);
}

Tensor make_tensor(Storage storage, ScalarType dtype, DimVector sizes, DimVector strides, int64_t storage_offset) {
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), dtype, std::move(sizes), std::move(strides),
                                             storage_offset));
}

Tensor alias(const Tensor& t) {
  return make_tensor(t.storage(), t.dtype(), t.sizes().vec(), t.strides().vec(), t.storage_offset());
}

Tensor alias_with(const Tensor& t, DimVector sizes, DimVector strides, int64_t storage_offset) {
  return make_tensor(t.storage(), t.dtype(), std::move(sizes), std::move(strides), storage_offset);
}

}  // namespace strider
