#include "strider/core/tensor.h"

#include "strider/core/layout.h"

namespace strider {

int64_t Tensor::size(int64_t d) const {
  return sizes()[layout::wrap_dim(d, dim(), "size")];
}

int64_t Tensor::stride(int64_t d) const {
  return strides()[layout::wrap_dim(d, dim(), "stride")];
}

bool Tensor::is_contiguous(MemoryFormat fmt) const {
  const auto& f = checked().flags();
  switch (fmt) {
    case MemoryFormat::ChannelsLast: return f.is_channels_last_contiguous;
    case MemoryFormat::ChannelsLast3d: return f.is_channels_last_3d_contiguous;
    default: return f.is_contiguous;
  }
}

MemoryFormat Tensor::suggest_memory_format() const {
  const auto& f = checked().flags();
  if (f.is_strides_like_channels_last) return MemoryFormat::ChannelsLast;
  if (f.is_strides_like_channels_last_3d) return MemoryFormat::ChannelsLast3d;
  return MemoryFormat::Contiguous;
}

}  // namespace strider
