// resize_ / resize_as_ (SPEC §6.6): change the size in place, restriding per the format.
#include "core/make_tensor.h"
#include "strider/core/layout.h"
#include "strider/core/tensor.h"
#include "strider/ops/convert.h"

namespace strider::ops {

const Tensor& resize_(const Tensor& self, IntArrayRef new_sizes, std::optional<MemoryFormat> fmt) {
  STRIDER_CHECK(!fmt || *fmt != MemoryFormat::Preserve, "resize_",
                "Unsupported memory formatPreserve: resize_ needs contiguous, channels_last or "
                "channels_last_3d");
  for (int64_t s : new_sizes)
    STRIDER_CHECK(s >= 0, "resize_", "negative dimension in ", new_sizes);
  DimVector strides_new;
  if (fmt) {
    strides_new = layout::strides_for_format(new_sizes, *fmt, "resize_");
  } else if (new_sizes == self.sizes()) {
    return self;  // same size: strides are kept
  } else {
    strides_new = layout::contiguous_strides(new_sizes);
  }
  const int64_t span = storage_span(new_sizes, strides_new);
  if (span > 0)
    self.storage()->grow(static_cast<size_t>(self.storage_offset() + span) * self.element_size());
  self.impl()->set_sizes_and_strides(new_sizes.vec(), std::move(strides_new));
  return self;
}

const Tensor& resize_as_(const Tensor& self, const Tensor& other, std::optional<MemoryFormat> fmt) {
  if (fmt && *fmt == MemoryFormat::Preserve) fmt = other.suggest_memory_format();
  return resize_(self, other.sizes(), fmt);
}

}  // namespace strider::ops
