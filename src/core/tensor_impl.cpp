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

void TensorImpl::set_data(const TensorImpl& other) {
  storage_ = other.storage_;
  dtype_ = other.dtype_;
  storage_offset_ = other.storage_offset_;
  set_sizes_and_strides(other.sizes_, other.strides_);
}

void TensorImpl::throw_no_memory() const {
  STRIDER_CHECK(false, "tensor", "a tensor of shape ", sizes(), " and dtype ", dtype_,
                " has no memory: it is a deferred parameter not yet materialized (nn::materialize, or wrap the model "
                "with FullyShardedDataParallel) or a parameter FSDP freed after use (read it inside the forward, or "
                "through a state dict)");
  __builtin_unreachable();
}

}  // namespace strider
