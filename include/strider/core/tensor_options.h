#pragma once
// TensorOptions: how a factory lays out what it creates. Converts implicitly from a dtype or a
// memory format, so `zeros({2, 3}, kDouble)` and `empty(s, MemoryFormat::ChannelsLast)` read well.
#include "strider/core/memory_format.h"
#include "strider/core/scalar_type.h"

namespace strider {

class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType dtype) : dtype_(dtype) {}
  TensorOptions(MemoryFormat fmt) : memory_format_(fmt) {}

  TensorOptions dtype(ScalarType t) const { auto o = *this; o.dtype_ = t; return o; }
  TensorOptions memory_format(MemoryFormat f) const { auto o = *this; o.memory_format_ = f; return o; }

  ScalarType dtype() const { return dtype_; }
  MemoryFormat memory_format() const { return memory_format_; }

 private:
  ScalarType dtype_ = kFloat;
  MemoryFormat memory_format_ = MemoryFormat::Contiguous;
};

}  // namespace strider
