// to / contiguous / clone / copy_ / fill_: SPEC §6.
#include "core/make_tensor.h"
#include "kernels/copy.h"
#include "ops/kernel_dispatch.h"
#include "ops/memory_overlap.h"
#include "strider/core/layout.h"
#include "strider/ops/check_mode.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"
#include "strider/ops/view.h"

namespace strider::ops {

Tensor to(const Tensor& self, MemoryFormat fmt) { return to(self, self.dtype(), fmt, false); }

Tensor to(const Tensor& self, ScalarType dtype, MemoryFormat fmt, bool copy) {
  // Alias rule (§6.4): same dtype, no forced copy, and the format already matches.
  if (dtype == self.dtype() && !copy &&
      (fmt == MemoryFormat::Preserve || self.suggest_memory_format() == fmt))
    return self;
  Tensor out = make_tensor(self.sizes().vec(), like_strides(self, fmt, "to"), dtype);
  copy_(out, self);
  if (fmt == MemoryFormat::Preserve) ops::check_memory_format_kept("to", {&self}, out);
  return out;
}

Tensor contiguous(const Tensor& self, MemoryFormat fmt) {
  if (self.is_contiguous(fmt)) return self;
  STRIDER_CHECK(fmt != MemoryFormat::Preserve, "contiguous",
                "preserve memory format is unsupported by the contiguous operator; pass "
                "contiguous, channels_last or channels_last_3d (tensor ", self.sizes(), "@", self.strides(), ")");
  return clone(self, fmt);
}

Tensor clone(const Tensor& self, MemoryFormat fmt) {
  Tensor out = make_tensor(self.sizes().vec(), like_strides(self, fmt, "clone"), self.dtype());
  copy_(out, self);
  if (fmt == MemoryFormat::Preserve) ops::check_memory_format_kept("clone", {&self}, out);
  return out;
}

const Tensor& copy_(const Tensor& self, const Tensor& src) {
  STRIDER_CHECK(src.defined(), "copy_", "source tensor is undefined");
  check_no_overlap("copy_", self, {&src});
  Tensor source = src.sizes() == self.sizes() ? src : expand(src, self.sizes());
  kernels::copy({self, source}, ops::dispatch("copy_"));
  self.storage()->bump_generation();
  return self;
}

const Tensor& fill_(const Tensor& self, const Scalar& value) {
  check_scalar_fits(value, self.dtype(), "fill_");
  kernels::fill({self, value}, ops::dispatch("fill_"));
  self.storage()->bump_generation();
  return self;
}

const Tensor& zero_(const Tensor& self) { return fill_(self, 0); }

}  // namespace strider::ops
