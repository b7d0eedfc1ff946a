#pragma once
// A tensor re-described for kernel libraries that read a layout from strides alone.
#include "strider/core/tensor.h"

namespace strider::ops {

// `t` made dense in `fmt` and described with `fmt`'s formula strides, size-1 dims included: the
// same bytes, but a kernel library sees one unambiguous layout (an N1HW tensor dense in NHWC
// order would otherwise carry NCHW strides and send oneDNN to its reference kernels).
Tensor dense_in_format(const Tensor& t, MemoryFormat fmt);

}  // namespace strider::ops
