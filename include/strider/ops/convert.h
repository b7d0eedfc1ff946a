#pragma once
// Layout and dtype conversion without autograd (SPEC §6); the Tensor methods of the same names
// are the differentiable forms. In-place functions take the handle by const reference: the data
// changes, the handle does not.
#include <optional>

#include "strider/core/tensor.h"

namespace strider::ops {

Tensor to(const Tensor& self, MemoryFormat fmt);
Tensor to(const Tensor& self, ScalarType dtype, MemoryFormat fmt = MemoryFormat::Preserve,
          bool copy = false);
Tensor contiguous(const Tensor& self, MemoryFormat fmt = MemoryFormat::Contiguous);
Tensor clone(const Tensor& self, MemoryFormat fmt = MemoryFormat::Preserve);
const Tensor& copy_(const Tensor& self, const Tensor& src);
// value must convert to self's dtype without overflow (check_scalar_fits).
const Tensor& fill_(const Tensor& self, const Scalar& value);
const Tensor& zero_(const Tensor& self);
const Tensor& resize_(const Tensor& self, IntArrayRef sizes, std::optional<MemoryFormat> fmt = std::nullopt);
const Tensor& resize_as_(const Tensor& self, const Tensor& other, std::optional<MemoryFormat> fmt = std::nullopt);
Scalar item(const Tensor& self);
// Throws a strider::Error naming `op` unless `value` converts to `dtype` without overflow, by
// PyTorch's rule (c10::checked_convert, as its fill_, full and masked_fill apply it): finite
// values within the dtype's range; infinities and NaN for floating dtypes only; an integer may
// wrap into uint8 from as low as -255.
void check_scalar_fits(const Scalar& value, ScalarType dtype, const char* op);

}  // namespace strider::ops
