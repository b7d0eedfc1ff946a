// Differentiable views, conversions, cat and stack (the Tensor methods and free functions).
#include "autograd/formulas/grad_utils.h"
#include "strider/autograd/functions.h"
#include "strider/core/dispatch.h"
#include "strider/ops/cat.h"

namespace strider {

using autograd::InputGeometry;
using autograd::Node;
using autograd::record;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

namespace {

// Views whose backward reshapes the gradient back to the input's sizes.
Tensor reshape_like_backward(const char* name, const Tensor& self, Tensor out) {
  if (out.is_same(self) || !autograd::any_requires_grad({&self})) return out;
  InputGeometry gi(self);
  return record(name, {&self}, out, [=](const Grads& g, const Node&) -> Grads {
    return {ops::reshape(g[0], gi.sizes)};
  });
}

// Views that pick a region of the input: the gradient is zero outside it.
template <class Region>
Tensor region_backward(const char* name, const Tensor& self, Tensor out, Region region) {
  if (!autograd::any_requires_grad({&self})) return out;
  InputGeometry gi(self);
  return record(name, {&self}, out, [=](const Grads& g, const Node&) -> Grads {
    Tensor gin = zeros(gi.sizes, g[0].dtype());
    ops::copy_(region(gin), g[0]);
    return {gin};
  });
}

}  // namespace

Tensor Tensor::view(IntArrayRef sizes) const { return reshape_like_backward("ViewBackward", *this, ops::view(*this, sizes)); }
Tensor Tensor::reshape(IntArrayRef sizes) const { return reshape_like_backward("ReshapeBackward", *this, ops::reshape(*this, sizes)); }
Tensor Tensor::squeeze() const { return reshape_like_backward("SqueezeBackward", *this, ops::squeeze(*this)); }
Tensor Tensor::squeeze(int64_t d) const { return reshape_like_backward("SqueezeBackward", *this, ops::squeeze(*this, d)); }
Tensor Tensor::unsqueeze(int64_t d) const { return reshape_like_backward("UnsqueezeBackward", *this, ops::unsqueeze(*this, d)); }
Tensor Tensor::flatten(int64_t s, int64_t e) const { return reshape_like_backward("FlattenBackward", *this, ops::flatten(*this, s, e)); }

Tensor Tensor::permute(IntArrayRef dims) const {
  Tensor out = ops::permute(*this, dims);
  if (!autograd::any_requires_grad({this})) return out;
  DimVector inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) inverse[layout::wrap_dim(dims[i], dim(), "permute")] = static_cast<int64_t>(i);
  return record("PermuteBackward", {this}, out, [=](const Grads& g, const Node&) -> Grads {
    return {ops::permute(g[0], inverse)};
  });
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  Tensor out = ops::transpose(*this, d0, d1);
  if (!autograd::any_requires_grad({this})) return out;
  return record("TransposeBackward", {this}, out, [=](const Grads& g, const Node&) -> Grads {
    return {ops::transpose(g[0], d0, d1)};
  });
}

Tensor Tensor::t() const { return dim() == 2 ? transpose(0, 1) : ops::t(*this); }

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  return region_backward("NarrowBackward", *this, ops::narrow(*this, d, start, length),
                         [=](const Tensor& gin) { return ops::narrow(gin, d, start, length); });
}

Tensor Tensor::slice(int64_t d, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) const {
  return region_backward("SliceBackward", *this, ops::slice(*this, d, start, end, step),
                         [=](const Tensor& gin) { return ops::slice(gin, d, start, end, step); });
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  return region_backward("SelectBackward", *this, ops::select(*this, d, index),
                         [=](const Tensor& gin) { return ops::select(gin, d, index); });
}

Tensor Tensor::expand(IntArrayRef sizes) const {
  Tensor out = ops::expand(*this, sizes);
  if (!autograd::any_requires_grad({this})) return out;
  InputGeometry gi(*this);
  return record("ExpandBackward", {this}, out, [=](const Grads& g, const Node&) -> Grads {
    return {autograd::reduce_to(g[0], gi.sizes, gi.dtype)};
  });
}

Tensor Tensor::as_strided(IntArrayRef sizes, IntArrayRef strides, std::optional<int64_t> offset) const {
  Tensor out = ops::as_strided(*this, sizes, strides, offset);
  if (!autograd::any_requires_grad({this})) return out;
  // Scatter-add the gradient through the output's geometry into a buffer shaped like the
  // storage, then gather the input's geometry from it (overlapping outputs sum correctly).
  const int64_t storage_elems = static_cast<int64_t>(storage()->nbytes() / element_size());
  DimVector in_sizes = this->sizes().vec(), in_strides = this->strides().vec();
  DimVector out_sizes = sizes.vec(), out_strides = strides.vec();
  const int64_t in_off = storage_offset(), out_off = offset.value_or(storage_offset());
  return record("AsStridedBackward", {this}, out, [=](const Grads& g, const Node&) -> Grads {
    Tensor buf = zeros({storage_elems}, kDouble);
    Tensor gd = ops::to(g[0], kDouble, MemoryFormat::Contiguous, true);
    double* b = buf.data_ptr<double>();
    const double* src = gd.data_ptr<double>();
    const int64_t n = gd.numel(), nd = static_cast<int64_t>(out_sizes.size());
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, off = out_off;
      for (int64_t d = nd - 1; d >= 0; --d) {
        off += (rem % out_sizes[d]) * out_strides[d];
        rem /= out_sizes[d];
      }
      b[off] += src[i];
    }
    Tensor gin = ops::as_strided(buf, in_sizes, in_strides, in_off);
    return {ops::to(gin, g[0].dtype(), MemoryFormat::Contiguous, true)};
  });
}

// ---- conversions: identity gradients, cast back to the input's dtype.
namespace {
Tensor conversion_backward(const char* name, const Tensor& self, Tensor out) {
  if (out.is_same(self) || !autograd::any_requires_grad({&self})) return out;
  const ScalarType dtype = self.dtype();
  return record(name, {&self}, out, [=](const Grads& g, const Node&) -> Grads {
    return {g[0].dtype() == dtype ? g[0] : ops::to(g[0], dtype)};
  });
}
}  // namespace

Tensor Tensor::to(MemoryFormat fmt) const { return conversion_backward("ToCopyBackward", *this, ops::to(*this, fmt)); }
Tensor Tensor::to(ScalarType dtype, MemoryFormat fmt, bool copy) const {
  return conversion_backward("ToCopyBackward", *this, ops::to(*this, dtype, fmt, copy));
}
Tensor Tensor::contiguous(MemoryFormat fmt) const {
  return conversion_backward("ContiguousBackward", *this, ops::contiguous(*this, fmt));
}
Tensor Tensor::clone(MemoryFormat fmt) const { return conversion_backward("CloneBackward", *this, ops::clone(*this, fmt)); }

const Tensor& Tensor::copy_(const Tensor& src) const {
  autograd::check_inplace(*this, "copy_");
  STRIDER_CHECK(!autograd::any_requires_grad({&src}), "copy_",
                "copying from a tensor that requires grad into an existing tensor is not "
                "differentiable; use clone() or to() instead, or detach() the source");
  ops::copy_(*this, src);
  return *this;
}
const Tensor& Tensor::fill_(const Scalar& v) const {
  autograd::check_inplace(*this, "fill_");
  ops::fill_(*this, v);
  return *this;
}
const Tensor& Tensor::zero_() const { return fill_(0); }
const Tensor& Tensor::resize_(IntArrayRef sizes, std::optional<MemoryFormat> fmt) const {
  autograd::check_inplace(*this, "resize_");
  ops::resize_(*this, sizes, fmt);
  return *this;
}
const Tensor& Tensor::resize_as_(const Tensor& other, std::optional<MemoryFormat> fmt) const {
  autograd::check_inplace(*this, "resize_as_");
  ops::resize_as_(*this, other, fmt);
  return *this;
}
Scalar Tensor::item() const { return ops::item(*this); }

// ---- cat / stack
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  Tensor out = ops::cat(tensors, dim);
  const int64_t d = layout::wrap_dim(dim, out.dim(), "cat");
  std::vector<InputGeometry> geoms;
  for (const Tensor& t : tensors) geoms.emplace_back(t);
  record("CatBackward", tensors, &out, [=](const Grads& g, const Node&) -> Grads {
    Grads result;
    int64_t offset = 0;
    for (const auto& gi : geoms) {
      // 1-d empty inputs are skipped by cat (PyTorch's legacy rule) and get no gradient.
      if (gi.sizes.size() == 1 && gi.sizes[0] == 0 && g[0].dim() != 1) {
        result.push_back(Tensor());
        continue;
      }
      Tensor part = ops::narrow(g[0], d, offset, gi.sizes[d]);
      offset += gi.sizes[d];
      result.push_back(part.dtype() == gi.dtype ? part : ops::to(part, gi.dtype));
    }
    return result;
  });
  return out;
}

std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim) {
  STRIDER_CHECK(t.dim() > 0, "split", "cannot split a 0-d tensor");
  const int64_t d = layout::wrap_dim(dim, t.dim(), "split");
  const int64_t n = t.sizes()[d];
  STRIDER_CHECK(split_size > 0 || (split_size == 0 && n == 0), "split", "split_size must be positive, got ",
                split_size, " for dim ", d, " of size ", n);
  std::vector<Tensor> pieces;
  for (int64_t start = 0; start < n || (n == 0 && pieces.empty()); start += std::max<int64_t>(split_size, 1))
    pieces.push_back(ops::narrow(t, d, start, std::min(split_size, n - start)));
  if (!autograd::any_requires_grad({&t})) return pieces;
  const ScalarType dtype = t.dtype();
  record("SplitBackward", {t}, pieces, [=](const Grads& g, const Node&) -> Grads {
    // Always a cat, one piece too (PyTorch's split_with_sizes_backward): it decides the layout.
    Tensor whole = ops::cat(g, d);
    return {whole.dtype() == dtype ? whole : ops::to(whole, dtype)};
  });
  return pieces;
}

std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim) {
  STRIDER_CHECK(t.dim() > 0, "chunk", "cannot chunk a 0-d tensor");
  STRIDER_CHECK(chunks > 0, "chunk", "the number of chunks must be positive, got ", chunks);
  const int64_t d = layout::wrap_dim(dim, t.dim(), "chunk");
  const int64_t n = t.sizes()[d];
  if (n == 0) return std::vector<Tensor>(static_cast<size_t>(chunks), t.narrow(d, 0, 0));
  return split(t, (n + chunks - 1) / chunks, d);
}

std::vector<Tensor> unbind(const Tensor& t, int64_t dim) {
  STRIDER_CHECK(t.dim() > 0, "unbind", "cannot unbind a 0-d tensor (PyTorch: 'Dimension specified as 0 but tensor "
                "has no dimensions')");
  const int64_t d = layout::wrap_dim(dim, t.dim(), "unbind");
  std::vector<Tensor> pieces;
  for (int64_t i = 0; i < t.sizes()[d]; ++i) pieces.push_back(ops::select(t, d, i));
  if (pieces.empty() || !autograd::any_requires_grad({&t})) return pieces;
  const ScalarType dtype = t.dtype();
  record("UnbindBackward", {t}, pieces, [=](const Grads& g, const Node&) -> Grads {
    Tensor whole = ops::stack(g, d);
    return {whole.dtype() == dtype ? whole : ops::to(whole, dtype)};
  });
  return pieces;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  Tensor out = ops::stack(tensors, dim);
  const int64_t d = layout::wrap_dim(dim, out.dim(), "stack");
  std::vector<ScalarType> dtypes;
  for (const Tensor& t : tensors) dtypes.push_back(t.dtype());
  record("StackBackward", tensors, &out, [=](const Grads& g, const Node&) -> Grads {
    Grads result;
    for (size_t i = 0; i < dtypes.size(); ++i) {
      Tensor part = ops::select(g[0], d, static_cast<int64_t>(i));
      result.push_back(part.dtype() == dtypes[i] ? part : ops::to(part, dtypes[i]));
    }
    return result;
  });
  return out;
}

}  // namespace strider
