#include "strider/ops/factory.h"

#include <cmath>
#include <cstring>

#include "core/make_tensor.h"
#include "kernels/copy.h"
#include "strider/ops/convert.h"
#include "strider/ops/view.h"
#include "strider/core/dispatch.h"
#include "strider/core/layout.h"

namespace strider {

Tensor empty(IntArrayRef sizes, TensorOptions options) {
  checked_numel(sizes, "empty");  // before any stride is computed from the sizes
  return make_tensor(sizes.vec(), layout::strides_for_format(sizes, options.memory_format(), "empty"),
                     options.dtype());
}

Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions options) {
  STRIDER_CHECK(sizes.size() == strides.size(), "empty_strided", "sizes ", sizes, " and strides ",
                strides, " must have the same length");
  return make_tensor(sizes.vec(), strides.vec(), options.dtype());
}

Tensor zeros(IntArrayRef sizes, TensorOptions options) { return full(sizes, 0, options); }
Tensor ones(IntArrayRef sizes, TensorOptions options) { return full(sizes, 1, options); }

Tensor full(IntArrayRef sizes, const Scalar& value, TensorOptions options) {
  Tensor t = empty(sizes, options);
  ops::check_scalar_fits(value, t.dtype(), "full");
  ops::fill_(t, value);
  return t;
}

Tensor arange(const Scalar& end) { return arange(0, end, 1); }

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step) {
  bool integral = !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
  return arange(start, end, step, integral ? kLong : kFloat);
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, ScalarType dtype) {
  double s = start.to_double(), e = end.to_double(), st = step.to_double();
  STRIDER_CHECK(st != 0, "arange", "step must be nonzero");
  STRIDER_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "arange", "upper bound ", e,
                " and lower bound ", s, " inconsistent with step sign ", st);
  int64_t n = static_cast<int64_t>(std::ceil((e - s) / st));
  Tensor t = empty({n}, dtype);
  dispatch_all(dtype, "arange", [&]<class T>() {
    T* p = t.data_ptr<T>();
    if constexpr (std::is_integral_v<T>) {
      int64_t si = start.to_long(), sti = step.to_long();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(si + i * sti);
    } else {
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(s + static_cast<double>(i) * st);
    }
  });
  return t;
}

namespace {

template <class Draw>
Tensor random_tensor(IntArrayRef sizes, TensorOptions options, const char* op, Draw draw) {
  Tensor contig = empty(sizes, options.dtype());
  dispatch_floating(options.dtype(), op, [&]<class T>() {
    T* p = contig.data_ptr<T>();
    for (int64_t i = 0; i < contig.numel(); ++i) p[i] = static_cast<T>(draw());
  });
  if (options.memory_format() == MemoryFormat::Contiguous) return contig;
  Tensor out = empty(sizes, options);
  ops::copy_(out, contig);
  return out;
}

}  // namespace

Tensor rand(IntArrayRef sizes, TensorOptions options, Generator* generator) {
  Generator& g = generator ? *generator : default_generator();
  return random_tensor(sizes, options, "rand", [&] { return g.uniform_double(); });
}

Tensor randn(IntArrayRef sizes, TensorOptions options, Generator* generator) {
  Generator& g = generator ? *generator : default_generator();
  return random_tensor(sizes, options, "randn", [&] { return g.normal(); });
}

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype,
                 std::function<void(void*)> deleter) {
  STRIDER_CHECK(data != nullptr || product(sizes) == 0, "from_blob", "null data pointer for size ", sizes);
  STRIDER_CHECK(sizes.size() == strides.size(), "from_blob", "sizes ", sizes, " and strides ",
                strides, " must have the same length");
  int64_t span = storage_span(sizes, strides);
  auto storage = std::make_shared<StorageImpl>(data, static_cast<size_t>(span) * element_size(dtype),
                                               std::move(deleter));
  return make_tensor(std::move(storage), dtype, sizes.vec(), strides.vec(), 0);
}

Tensor from_blob(void* data, IntArrayRef sizes, ScalarType dtype, std::function<void(void*)> deleter) {
  return from_blob(data, sizes, layout::contiguous_strides(sizes), dtype, std::move(deleter));
}

Tensor scalar_tensor(const Scalar& value, std::optional<ScalarType> dtype) {
  Tensor t = empty({}, dtype.value_or(value.default_dtype()));
  ops::fill_(t, value);
  return t;
}

Tensor tensor(const std::vector<double>& values, ScalarType dtype) {
  Tensor src = from_blob(const_cast<double*>(values.data()), {static_cast<int64_t>(values.size())}, kDouble);
  return ops::to(src, dtype, MemoryFormat::Preserve, /*copy=*/true);
}

Tensor tensor(const std::vector<int64_t>& values, ScalarType dtype) {
  Tensor src = from_blob(const_cast<int64_t*>(values.data()), {static_cast<int64_t>(values.size())}, kLong);
  return ops::to(src, dtype, MemoryFormat::Preserve, /*copy=*/true);
}

DimVector like_strides(const Tensor& t, MemoryFormat fmt, const char* op) {
  if (fmt == MemoryFormat::Preserve) {
    if (t.is_non_overlapping_and_dense()) return t.strides().vec();
    return layout::infer_dense_strides(t.sizes(), t.strides());
  }
  return layout::strides_for_format(t.sizes(), fmt, op);
}

Tensor empty_like(const Tensor& t, MemoryFormat fmt) { return empty_like(t, t.dtype(), fmt); }

Tensor empty_like(const Tensor& t, ScalarType dtype, MemoryFormat fmt) {
  Allocator* tier = t.storage() ? t.storage()->allocator() : nullptr;
  return make_tensor(t.sizes().vec(), like_strides(t, fmt, "empty_like"), dtype,
                          tier && tier->propagates_to_like() ? *tier : cpu_allocator());
}

Tensor zeros_like(const Tensor& t, MemoryFormat fmt) { return zeros_like(t, t.dtype(), fmt); }
Tensor zeros_like(const Tensor& t, ScalarType dtype, MemoryFormat fmt) {
  Tensor out = empty_like(t, dtype, fmt);
  ops::zero_(out);
  return out;
}
Tensor ones_like(const Tensor& t, MemoryFormat fmt) { return ones_like(t, t.dtype(), fmt); }
Tensor ones_like(const Tensor& t, ScalarType dtype, MemoryFormat fmt) {
  Tensor out = empty_like(t, dtype, fmt);
  ops::fill_(out, 1);
  return out;
}
Tensor full_like(const Tensor& t, const Scalar& value, MemoryFormat fmt) {
  Tensor out = empty_like(t, fmt);
  ops::fill_(out, value);
  return out;
}

Tensor rand_like(const Tensor& t, MemoryFormat fmt, Generator* g) {
  Tensor out = empty_like(t, fmt);
  ops::copy_(out, rand(t.sizes(), t.dtype(), g));
  return out;
}

Tensor randn_like(const Tensor& t, MemoryFormat fmt, Generator* g) {
  Tensor out = empty_like(t, fmt);
  ops::copy_(out, randn(t.sizes(), t.dtype(), g));
  return out;
}

}  // namespace strider
