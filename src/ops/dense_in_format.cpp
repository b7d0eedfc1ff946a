#include "ops/dense_in_format.h"

#include "strider/core/layout.h"
#include "strider/ops/convert.h"
#include "strider/ops/view.h"

namespace strider::ops {

Tensor dense_in_format(const Tensor& t, MemoryFormat fmt) {
  Tensor c = contiguous(t, fmt);
  DimVector want = layout::strides_for_format(c.sizes(), fmt, "dense_in_format");
  if (c.strides() == IntArrayRef(want) || c.numel() == 0) return c;
  return as_strided(c, c.sizes(), want);
}

}  // namespace strider::ops
