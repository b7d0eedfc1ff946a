#pragma once
// Tensor: the user-facing handle to a TensorImpl. Copying a Tensor shares the impl (like
// PyTorch's at::Tensor). Metadata accessors are defined here; methods that compute (to,
// contiguous, clone, views, arithmetic) are declared here and defined in the ops layer, as ATen
// does, so this header stays light and includes only point down.
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "strider/core/error.h"
#include "strider/core/memory_format.h"
#include "strider/core/scalar.h"
#include "strider/core/tensor_impl.h"
#include "strider/core/tensor_options.h"

namespace strider {

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  // True when both handles name the same TensorImpl (PyTorch's `a is b`).
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  // ---- metadata
  IntArrayRef sizes() const { return impl_->sizes(); }
  IntArrayRef strides() const { return impl_->strides(); }
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t dim() const { return impl_->dim(); }
  int64_t numel() const { return impl_->numel(); }
  int64_t storage_offset() const { return impl_->storage_offset(); }
  ScalarType dtype() const { return impl_->dtype(); }
  ScalarType scalar_type() const { return impl_->dtype(); }
  size_t element_size() const { return strider::element_size(dtype()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  const Storage& storage() const { return impl_->storage(); }
  TensorOptions options() const { return TensorOptions(dtype()); }
  void* data() const { return impl_->data(); }
  template <class T>
  T* data_ptr() const {
    STRIDER_CHECK(scalar_type_of<T> == dtype(), "data_ptr", "requested ",
                  scalar_type_of<T>, " data from a tensor of dtype ", dtype());
    return static_cast<T*>(impl_->data());
  }

  // ---- memory-format predicates (SPEC §4)
  // True when the tensor is dense in exactly `fmt`'s order (size-1 dims ignored).
  // Preserve answers like Contiguous (PyTorch's quirk).
  bool is_contiguous(MemoryFormat fmt = MemoryFormat::Contiguous) const;
  bool is_non_overlapping_and_dense() const { return impl_->flags().is_non_overlapping_and_dense; }
  // The format the strides suggest (gaps allowed, size-1 strides count); ops propagate this.
  MemoryFormat suggest_memory_format() const;

  // ---- conversion (defined in ops/convert.cpp)
  // Returns *this when the format already matches (suggest_memory_format() == fmt), else a copy
  // in `fmt`'s formula strides (restriding size-1 dims too).
  Tensor to(MemoryFormat fmt) const;
  // Converts the dtype; the copy keeps the layout per `fmt` (Preserve keeps dense strides).
  Tensor to(ScalarType dtype, MemoryFormat fmt = MemoryFormat::Preserve, bool copy = false) const;
  // Returns *this when is_contiguous(fmt), else a copy in `fmt`.
  Tensor contiguous(MemoryFormat fmt = MemoryFormat::Contiguous) const;
  Tensor clone(MemoryFormat fmt = MemoryFormat::Preserve) const;
  Tensor& copy_(const Tensor& src);
  Tensor& fill_(const Scalar& value);
  Tensor& zero_();
  Tensor& resize_(IntArrayRef sizes, std::optional<MemoryFormat> fmt = std::nullopt);
  Tensor& resize_as_(const Tensor& other, std::optional<MemoryFormat> fmt = std::nullopt);

  // ---- views (share storage; defined in ops/view.cpp)
  Tensor view(IntArrayRef sizes) const;
  Tensor reshape(IntArrayRef sizes) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, std::optional<int64_t> start = std::nullopt,
               std::optional<int64_t> end = std::nullopt, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor expand(IntArrayRef sizes) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor as_strided(IntArrayRef sizes, IntArrayRef strides,
                    std::optional<int64_t> storage_offset = std::nullopt) const;

  // ---- values
  Scalar item() const;
  template <class T>
  T item() const { return item().to<T>(); }

  // ---- arithmetic (defined in ops/pointwise.cpp); see ops/pointwise.h for the full list
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor div(const Tensor& other) const;
  Tensor& add_(const Tensor& other, const Scalar& alpha = 1);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(const Scalar& other);
  Tensor neg() const;
  Tensor abs() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor sum() const;
  Tensor sum(IntArrayRef dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(IntArrayRef dims, bool keepdim = false) const;

  // PyTorch-style text: tensor([[1., 2.], [3., 4.]], dtype=torch.float64).
  std::string to_string() const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a);

}  // namespace strider
