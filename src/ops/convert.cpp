// to / contiguous / clone / copy_ / fill_: SPEC §6.
#include "kernels/copy.h"
#include "ops/kernel_list.h"
#include "ops/make_tensor.h"
#include "strider/core/layout.h"
#include "strider/ops/check_mode.h"
#include "strider/ops/factory.h"

namespace strider {

Tensor Tensor::to(MemoryFormat fmt) const { return to(dtype(), fmt, false); }

Tensor Tensor::to(ScalarType dtype, MemoryFormat fmt, bool copy) const {
  // Alias rule (§6.4): same dtype, no forced copy, and the format already matches.
  if (dtype == this->dtype() && !copy &&
      (fmt == MemoryFormat::Preserve || suggest_memory_format() == fmt))
    return *this;
  Tensor out = ops::make_tensor(sizes().vec(), like_strides(*this, fmt, "to"), dtype);
  out.copy_(*this);
  if (fmt == MemoryFormat::Preserve) ops::check_memory_format_kept("to", {this}, out);
  return out;
}

Tensor Tensor::contiguous(MemoryFormat fmt) const {
  if (is_contiguous(fmt)) return *this;
  STRIDER_CHECK(fmt != MemoryFormat::Preserve, "contiguous",
                "preserve memory format is unsupported by the contiguous operator; pass "
                "contiguous, channels_last or channels_last_3d (tensor ", sizes(), "@", strides(), ")");
  return clone(fmt);
}

Tensor Tensor::clone(MemoryFormat fmt) const {
  Tensor out = ops::make_tensor(sizes().vec(), like_strides(*this, fmt, "clone"), dtype());
  out.copy_(*this);
  if (fmt == MemoryFormat::Preserve) ops::check_memory_format_kept("clone", {this}, out);
  return out;
}

Tensor& Tensor::copy_(const Tensor& src) {
  STRIDER_CHECK(src.defined(), "copy_", "source tensor is undefined");
  Tensor source = src.sizes() == sizes() ? src : src.expand(sizes());
  ops::run_kernel("copy_", [&] { kernels::cpu::copy(*this, source); },
                  [&] { kernels::ref::copy(*this, source); });
  return *this;
}

Tensor& Tensor::fill_(const Scalar& value) {
  ops::run_kernel("fill_", [&] { kernels::cpu::fill(*this, value); },
                  [&] { kernels::ref::fill(*this, value); });
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0); }

}  // namespace strider
