// Views: new geometry over the same storage (SPEC §7). Nothing here copies, except reshape
// when no view exists.
#include <algorithm>

#include "core/make_tensor.h"
#include "strider/core/layout.h"
#include "strider/core/tensor.h"
#include "strider/ops/convert.h"
#include "strider/ops/view.h"

namespace strider::ops {
namespace {

// Resolves a single -1 in `sizes` against `numel`.
DimVector infer_size(IntArrayRef sizes, int64_t numel, const char* op) {
  DimVector out = sizes.vec();
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      STRIDER_CHECK(infer < 0, op, "only one dimension can be inferred (-1) in shape ", sizes);
      infer = static_cast<int64_t>(i);
    } else {
      STRIDER_CHECK(out[i] >= 0, op, "invalid shape dimension ", out[i], " in ", sizes);
      STRIDER_CHECK(!__builtin_mul_overflow(known, out[i], &known), op, "shape ", sizes,
                    " is invalid for input of size ", numel, " (its element count overflows 64 bits)");
    }
  }
  if (infer >= 0) {
    STRIDER_CHECK(known != 0 && numel % known == 0, op, "shape ", sizes,
                  " is invalid for input of size ", numel);
    out[infer] = numel / known;
  } else {
    STRIDER_CHECK(known == numel, op, "shape ", sizes, " is invalid for input of size ", numel);
  }
  return out;
}

}  // namespace

Tensor view(const Tensor& self, IntArrayRef sizes) {
  DimVector shape = infer_size(sizes, self.numel(), "view");
  auto st = layout::view_strides(self.sizes(), self.strides(), shape);
  STRIDER_CHECK(st.has_value(), "view",
                "view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces). Use .reshape(...) instead. "
                "(input ", self.sizes(), "@", self.strides(), " cannot be viewed as ", IntArrayRef(shape), ")");
  return alias_with(self, std::move(shape), std::move(*st), self.storage_offset());
}

Tensor reshape(const Tensor& self, IntArrayRef sizes) {
  DimVector shape = infer_size(sizes, self.numel(), "reshape");
  if (auto st = layout::view_strides(self.sizes(), self.strides(), shape))
    return alias_with(self, std::move(shape), std::move(*st), self.storage_offset());
  return view(clone(self, MemoryFormat::Contiguous), shape);
}

Tensor permute(const Tensor& self, IntArrayRef dims) {
  const int64_t n = self.dim();
  STRIDER_CHECK(static_cast<int64_t>(dims.size()) == n, "permute", "number of dims ", dims,
                " doesn't match the tensor's rank ", n, " (shape ", self.sizes(), ")");
  DimVector sz(n), st(n);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = layout::wrap_dim(dims[i], n, "permute");
    STRIDER_CHECK(!seen[d], "permute", "repeated dim ", dims[i], " in ", dims);
    seen[d] = true;
    sz[i] = self.sizes()[d];
    st[i] = self.strides()[d];
  }
  return alias_with(self, std::move(sz), std::move(st), self.storage_offset());
}

Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  const int64_t n = self.dim();
  if (n == 0) {
    layout::wrap_dim(dim0, n, "transpose");
    layout::wrap_dim(dim1, n, "transpose");
    return alias_with(self, {}, {}, self.storage_offset());
  }
  int64_t a = layout::wrap_dim(dim0, n, "transpose"), b = layout::wrap_dim(dim1, n, "transpose");
  DimVector sz = self.sizes().vec(), st = self.strides().vec();
  std::swap(sz[a], sz[b]);
  std::swap(st[a], st[b]);
  return alias_with(self, std::move(sz), std::move(st), self.storage_offset());
}

Tensor t(const Tensor& self) {
  STRIDER_CHECK(self.dim() <= 2, "t", "expects a tensor with <= 2 dimensions, but got shape ", self.sizes(),
                "; use transpose(dim0, dim1) or permute for higher ranks");
  return self.dim() < 2 ? self : transpose(self, 0, 1);
}

Tensor narrow(const Tensor& self, int64_t d, int64_t start, int64_t length) {
  STRIDER_CHECK(self.dim() > 0, "narrow", "cannot narrow a 0-d tensor");
  d = layout::wrap_dim(d, self.dim(), "narrow");
  const int64_t size = self.sizes()[d];
  STRIDER_CHECK(start >= -size && start <= size, "narrow", "start (", start,
                ") is out of range for dimension ", d, " of size ", size, " (shape ", self.sizes(), ")");
  if (start < 0) start += size;
  STRIDER_CHECK(length >= 0 && start + length <= size, "narrow", "start (", start, ") + length (",
                length, ") exceeds dimension ", d, " of size ", size, " (shape ", self.sizes(), ")");
  DimVector sz = self.sizes().vec();
  sz[d] = length;
  return alias_with(self, std::move(sz), self.strides().vec(), self.storage_offset() + start * self.strides()[d]);
}

Tensor slice(const Tensor& self, int64_t d, std::optional<int64_t> start_opt, std::optional<int64_t> end_opt,
                     int64_t step) {
  STRIDER_CHECK(self.dim() > 0, "slice", "cannot slice a 0-d tensor");
  STRIDER_CHECK(step > 0, "slice", "slice step must be positive, got ", step);
  d = layout::wrap_dim(d, self.dim(), "slice");
  const int64_t size = self.sizes()[d];
  int64_t start = start_opt.value_or(0), end = end_opt.value_or(size);
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  DimVector sz = self.sizes().vec(), st = self.strides().vec();
  sz[d] = (end - start + step - 1) / step;
  st[d] *= step;
  return alias_with(self, std::move(sz), std::move(st), self.storage_offset() + start * self.strides()[d]);
}

Tensor select(const Tensor& self, int64_t d, int64_t index) {
  STRIDER_CHECK(self.dim() > 0, "select", "select() cannot be applied to a 0-dim tensor");
  d = layout::wrap_dim(d, self.dim(), "select");
  const int64_t size = self.sizes()[d];
  STRIDER_CHECK(index >= -size && index < size, "select", "index ", index,
                " is out of bounds for dimension ", d, " with size ", size, " (shape ", self.sizes(), ")");
  if (index < 0) index += size;
  DimVector sz = self.sizes().vec(), st = self.strides().vec();
  sz.erase(sz.begin() + d);
  st.erase(st.begin() + d);
  return alias_with(self, std::move(sz), std::move(st), self.storage_offset() + index * self.strides()[d]);
}

Tensor expand(const Tensor& self, IntArrayRef target) {
  const int64_t nd = static_cast<int64_t>(target.size()), td = self.dim();
  STRIDER_CHECK(nd >= td, "expand", "the number of sizes provided (", nd,
                ") must be greater or equal to the number of dimensions in the tensor (", td,
                "); shape ", self.sizes(), " cannot expand to ", target);
  DimVector sz(nd), st(nd);
  for (int64_t i = nd - 1; i >= 0; --i) {
    int64_t d = td - (nd - i);
    int64_t size = d >= 0 ? self.sizes()[d] : 1;
    int64_t stride = d >= 0 ? self.strides()[d] : (i + 1 < nd ? sz[i + 1] * st[i + 1] : 1);
    int64_t t = target[i];
    if (t == -1) {
      STRIDER_CHECK(d >= 0, "expand", "-1 is not allowed in a leading, non-existing dimension ",
                    i, " (target ", target, ")");
      t = size;
    }
    if (size != t) {
      STRIDER_CHECK(size == 1, "expand", "the expanded size of the tensor (", t,
                    ") must match the existing size (", size, ") at non-singleton dimension ", i,
                    ". Target sizes: ", target, ". Tensor sizes: ", self.sizes());
      size = t;
      stride = 0;
    }
    if (d < 0 && td == 0) stride = 0;
    sz[i] = size;
    st[i] = stride;
  }
  if (td == 0) std::fill(st.begin(), st.end(), 0);
  return alias_with(self, std::move(sz), std::move(st), self.storage_offset());
}

Tensor squeeze(const Tensor& self) {
  DimVector sz, st;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (self.sizes()[d] != 1) {
      sz.push_back(self.sizes()[d]);
      st.push_back(self.strides()[d]);
    }
  return alias_with(self, std::move(sz), std::move(st), self.storage_offset());
}

Tensor squeeze(const Tensor& self, int64_t d) {
  if (self.dim() == 0) {
    layout::wrap_dim(d, 0, "squeeze");
    return alias_with(self, {}, {}, self.storage_offset());
  }
  d = layout::wrap_dim(d, self.dim(), "squeeze");
  if (self.sizes()[d] != 1) return alias(self);
  DimVector sz = self.sizes().vec(), st = self.strides().vec();
  sz.erase(sz.begin() + d);
  st.erase(st.begin() + d);
  return alias_with(self, std::move(sz), std::move(st), self.storage_offset());
}

Tensor unsqueeze(const Tensor& self, int64_t d) {
  d = layout::wrap_dim(d, self.dim() + 1, "unsqueeze");
  DimVector sz = self.sizes().vec(), st = self.strides().vec();
  int64_t new_stride = d < self.dim() ? sz[d] * st[d] : 1;
  sz.insert(sz.begin() + d, 1);
  st.insert(st.begin() + d, new_stride);
  return alias_with(self, std::move(sz), std::move(st), self.storage_offset());
}

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  if (self.dim() == 0) return reshape(self, {1});
  int64_t s = layout::wrap_dim(start_dim, self.dim(), "flatten");
  int64_t e = layout::wrap_dim(end_dim, self.dim(), "flatten");
  STRIDER_CHECK(s <= e, "flatten", "start_dim (", start_dim, ") cannot come after end_dim (",
                end_dim, ") for shape ", self.sizes());
  if (s == e) return self;
  DimVector shape(self.sizes().begin(), self.sizes().begin() + s);
  int64_t n = 1;
  for (int64_t d = s; d <= e; ++d) n *= self.sizes()[d];
  shape.push_back(n);
  shape.insert(shape.end(), self.sizes().begin() + e + 1, self.sizes().end());
  return reshape(self, shape);
}

Tensor as_strided(const Tensor& self, IntArrayRef sz, IntArrayRef st, std::optional<int64_t> offset_opt) {
  STRIDER_CHECK(sz.size() == st.size(), "as_strided", "mismatch in length of strides ", st,
                " and shape ", sz);
  int64_t offset = offset_opt.value_or(self.storage_offset());
  STRIDER_CHECK(offset >= 0, "as_strided", "negative storage offset ", offset);
  int64_t max_index = offset;
  bool empty = false;
  for (size_t d = 0; d < sz.size(); ++d) {
    STRIDER_CHECK(sz[d] >= 0 && st[d] >= 0, "as_strided", "negative size or stride in ", sz, "@", st);
    if (sz[d] == 0) empty = true;
    max_index += (sz[d] - 1) * st[d];
  }
  const int64_t storage_elems =
      static_cast<int64_t>(self.storage()->nbytes() / self.element_size());
  STRIDER_CHECK(empty || max_index < storage_elems, "as_strided", "setStorage: sizes ", sz,
                ", strides ", st, ", storage offset ", offset,
                " require a storage of at least ", max_index + 1, " elements, but it has ",
                storage_elems);
  return alias_with(self, sz.vec(), st.vec(), offset);
}

}  // namespace strider::ops
