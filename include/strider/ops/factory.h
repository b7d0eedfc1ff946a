#pragma once
// Tensor creation. `options` carries dtype and memory format; *_like functions default to
// MemoryFormat::Preserve (SPEC §6.1: a dense input's strides are copied exactly, a non-dense one
// is densified keeping its dimension order).
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "strider/core/error.h"
#include "strider/core/generator.h"
#include "strider/core/tensor.h"

namespace strider {

// Note: with `using namespace strider`, a one-argument call on a std::vector, `empty(v)`, finds
// std::empty through argument-dependent lookup; write `strider::empty(v)` (braced lists are fine).
Tensor empty(IntArrayRef sizes, TensorOptions options = {});
// Uninitialized tensor with explicit strides (elements); the storage covers exactly its span.
Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions options = {});
Tensor zeros(IntArrayRef sizes, TensorOptions options = {});
Tensor ones(IntArrayRef sizes, TensorOptions options = {});
Tensor full(IntArrayRef sizes, const Scalar& value, TensorOptions options = {});
// Values start, start+step, ... below end. The dtype is int64 when all three are integral,
// float32 otherwise, unless `options` says else (pass a dtype to choose).
Tensor arange(const Scalar& end);
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1);
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, ScalarType dtype);
// Uniform [0, 1) and standard normal, drawn in logical element order whatever the format.
Tensor rand(IntArrayRef sizes, TensorOptions options = {}, Generator* generator = nullptr);
Tensor randn(IntArrayRef sizes, TensorOptions options = {}, Generator* generator = nullptr);
// Wraps caller-owned memory (no copy). `deleter` (optional) runs when the last view dies.
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype,
                 std::function<void(void*)> deleter = {});
Tensor from_blob(void* data, IntArrayRef sizes, ScalarType dtype,
                 std::function<void(void*)> deleter = {});
// A 0-d tensor holding `value` (float32, int64 or bool by the scalar's kind unless given).
Tensor scalar_tensor(const Scalar& value, std::optional<ScalarType> dtype = std::nullopt);
// A 1-d tensor copied from `values`.
Tensor tensor(const std::vector<double>& values, ScalarType dtype = kFloat);
Tensor tensor(const std::vector<int64_t>& values, ScalarType dtype = kLong);
// tensor({1.5, 2.5}), tensor({1, 2, 3}), tensor({true, false}): as torch.tensor, float32 for
// floating values, int64 for integers and bool for bools unless `dtype` says otherwise. (A list
// mixing integers and floating values has no one element type: write 1.0 for 1.)
template <class T>
  requires std::is_arithmetic_v<T>
Tensor tensor(std::initializer_list<T> values,
              ScalarType dtype = std::is_same_v<T, bool> ? kBool : (std::is_floating_point_v<T> ? kFloat : kLong)) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t))
      for (T v : values)
        STRIDER_CHECK(v <= static_cast<T>(INT64_MAX), "tensor", "value ", v, " does not fit int64");
    return tensor(std::vector<int64_t>(values.begin(), values.end()), dtype);
  }
  else
    return tensor(std::vector<double>(values.begin(), values.end()), dtype);
}

Tensor empty_like(const Tensor& t, MemoryFormat fmt = MemoryFormat::Preserve);
Tensor empty_like(const Tensor& t, ScalarType dtype, MemoryFormat fmt = MemoryFormat::Preserve);
Tensor zeros_like(const Tensor& t, MemoryFormat fmt = MemoryFormat::Preserve);
Tensor zeros_like(const Tensor& t, ScalarType dtype, MemoryFormat fmt = MemoryFormat::Preserve);
Tensor ones_like(const Tensor& t, MemoryFormat fmt = MemoryFormat::Preserve);
Tensor ones_like(const Tensor& t, ScalarType dtype, MemoryFormat fmt = MemoryFormat::Preserve);
Tensor full_like(const Tensor& t, const Scalar& value, MemoryFormat fmt = MemoryFormat::Preserve);
Tensor rand_like(const Tensor& t, MemoryFormat fmt = MemoryFormat::Preserve, Generator* g = nullptr);
Tensor randn_like(const Tensor& t, MemoryFormat fmt = MemoryFormat::Preserve, Generator* g = nullptr);

// The strides *_like gives `t` for `fmt` (exposed for tests and layout-aware callers).
DimVector like_strides(const Tensor& t, MemoryFormat fmt, const char* op);

}  // namespace strider
