// resize_ / resize_as_ (SPEC §6.6): change the size in place, restriding per the format.
#include "ops/make_tensor.h"
#include "strider/core/layout.h"
#include "strider/core/tensor.h"

namespace strider {

Tensor& Tensor::resize_(IntArrayRef new_sizes, std::optional<MemoryFormat> fmt) {
  STRIDER_CHECK(!fmt || *fmt != MemoryFormat::Preserve, "resize_",
                "Unsupported memory formatPreserve: resize_ needs contiguous, channels_last or "
                "channels_last_3d");
  for (int64_t s : new_sizes)
    STRIDER_CHECK(s >= 0, "resize_", "negative dimension in ", new_sizes);
  DimVector strides_new;
  if (fmt) {
    strides_new = layout::strides_for_format(new_sizes, *fmt, "resize_");
  } else if (new_sizes == sizes()) {
    return *this;  // same size: strides are kept
  } else {
    strides_new = layout::contiguous_strides(new_sizes);
  }
  const int64_t span = ops::storage_span(new_sizes, strides_new);
  if (span > 0)
    storage()->grow(static_cast<size_t>(storage_offset() + span) * element_size());
  impl()->set_sizes_and_strides(new_sizes.vec(), std::move(strides_new));
  return *this;
}

Tensor& Tensor::resize_as_(const Tensor& other, std::optional<MemoryFormat> fmt) {
  if (fmt && *fmt == MemoryFormat::Preserve) fmt = other.suggest_memory_format();
  return resize_(other.sizes(), fmt);
}

}  // namespace strider
