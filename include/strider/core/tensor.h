#pragma once
// Tensor: the user-facing handle to a TensorImpl. Copying a Tensor shares the impl (like
// PyTorch's at::Tensor). Metadata accessors are defined here; methods that compute (to,
// contiguous, clone, views, arithmetic) are declared here and defined in the ops layer, as ATen
// does, so this header stays light and includes only point down.
#include <functional>
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

namespace autograd {
class Node;
}

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
  IntArrayRef sizes() const { return checked().sizes(); }
  IntArrayRef strides() const { return checked().strides(); }
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t dim() const { return checked().dim(); }
  int64_t numel() const { return checked().numel(); }
  int64_t storage_offset() const { return checked().storage_offset(); }
  ScalarType dtype() const { return checked().dtype(); }
  ScalarType scalar_type() const { return checked().dtype(); }
  size_t element_size() const { return strider::element_size(dtype()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  const Storage& storage() const { return checked().storage(); }
  TensorOptions options() const { return TensorOptions(dtype()); }
  void* data() const { return checked().data(); }
  template <class T>
  T* data_ptr() const {
    STRIDER_CHECK(scalar_type_of<T> == dtype(), "data_ptr", "requested ",
                  scalar_type_of<T>, " data from a tensor of dtype ", dtype());
    return static_cast<T*>(checked().data());
  }

  // ---- memory-format predicates (SPEC §4)
  // True when the tensor is dense in exactly `fmt`'s order (size-1 dims ignored).
  // Preserve answers like Contiguous (PyTorch's quirk).
  bool is_contiguous(MemoryFormat fmt = MemoryFormat::Contiguous) const;
  bool is_non_overlapping_and_dense() const { return checked().flags().is_non_overlapping_and_dense; }
  // The format the strides suggest (gaps allowed, size-1 strides count); ops propagate this.
  MemoryFormat suggest_memory_format() const;

  // ---- autograd (defined in the autograd layer)
  bool requires_grad() const;
  // Marks a leaf as needing a gradient; throws on non-leaf tensors (use detach() first).
  Tensor& requires_grad_(bool requires_grad = true);
  // The accumulated gradient of a leaf (undefined until a backward reaches it).
  const Tensor& grad() const;
  Tensor& mutable_grad();
  void set_grad(const Tensor& grad);
  bool is_leaf() const;
  std::shared_ptr<autograd::Node> grad_fn() const;
  // Backpropagates from this tensor; `gradient` may be omitted for a one-element tensor.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  // A tensor sharing storage with this one, outside any graph.
  Tensor detach() const;
  // PyTorch's `tensor.data = data`: this tensor (every handle to it) takes data's storage, dtype,
  // shape and strides, keeping requires_grad and its hooks; an optimizer or another module that
  // holds it sees the new values. Its .grad() must then match (set_grad), and a gradient buffer
  // that no longer does is ended.
  void set_data(const Tensor& data) const;
  // Keeps .grad() of a non-leaf tensor after backward.
  void retain_grad() const;
  // fn(grad) runs when the gradient w.r.t. this tensor is computed; a defined return value
  // replaces the gradient. Returns a handle for remove_hook.
  int register_hook(std::function<Tensor(const Tensor&)> fn) const;
  void remove_hook(int handle) const;
  // fn(tensor) runs after a leaf's .grad() has been accumulated (FSDP and DDP hook in here).
  void register_post_accumulate_grad_hook(std::function<void(const Tensor&)> fn) const;

  // ---- conversion (defined in the autograd layer, on top of ops/convert.h)
  // Returns *this when the format already matches (suggest_memory_format() == fmt), else a copy
  // in `fmt`'s formula strides (restriding size-1 dims too).
  Tensor to(MemoryFormat fmt) const;
  // Converts the dtype; the copy keeps the layout per `fmt` (Preserve keeps dense strides).
  Tensor to(ScalarType dtype, MemoryFormat fmt = MemoryFormat::Preserve, bool copy = false) const;
  // Returns *this when is_contiguous(fmt), else a copy in `fmt`.
  Tensor contiguous(MemoryFormat fmt = MemoryFormat::Contiguous) const;
  Tensor clone(MemoryFormat fmt = MemoryFormat::Preserve) const;
  // In-place ops return *this; under grad mode they refuse tensors that require grad.
  const Tensor& copy_(const Tensor& src) const;
  const Tensor& fill_(const Scalar& value) const;
  const Tensor& zero_() const;
  const Tensor& resize_(IntArrayRef sizes, std::optional<MemoryFormat> fmt = std::nullopt) const;
  const Tensor& resize_as_(const Tensor& other, std::optional<MemoryFormat> fmt = std::nullopt) const;

  // ---- views (share storage; differentiable)
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

  // ---- arithmetic (differentiable); autograd/functions.h has the full list
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor div(const Tensor& other) const;
  const Tensor& add_(const Tensor& other, const Scalar& alpha = 1) const;
  const Tensor& mul_(const Tensor& other) const;
  const Tensor& mul_(const Scalar& other) const;
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
  // The impl, or a strider::Error for a default-constructed (undefined) Tensor.
  TensorImpl& checked() const {
    if (!impl_) [[unlikely]] detail::throw_undefined_tensor();
    return *impl_;
  }
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
