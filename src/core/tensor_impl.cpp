#include "strider/core/tensor_impl.h"

#include "strider/core/error.h"

namespace strider {

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, DimVector sizes, DimVector strides,
                       int64_t storage_offset)
    : storage_(std::move(storage)), dtype_(dtype), storage_offset_(storage_offset) {
  set_sizes_and_strides(std::move(sizes), std::move(strides));
}

void TensorImpl::set_sizes_and_strides(DimVector sizes, DimVector strides) {
  STRIDER_INTERNAL_ASSERT(sizes.size() == strides.size(), "sizes ", IntArrayRef(sizes),
                          " strides ", IntArrayRef(strides));
  sizes_ = std::move(sizes);
  strides_ = std::move(strides);
  numel_ = checked_numel(sizes_, "tensor");
  flags_ = layout::compute_flags(sizes_, strides_);
}

}  // namespace strider
