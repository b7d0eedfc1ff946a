#include "strider/ops/cat.h"

#include "core/make_tensor.h"
#include "ops/pointwise_layout.h"
#include "strider/core/layout.h"
#include "strider/ops/check_mode.h"
#include "strider/ops/convert.h"
#include "strider/ops/view.h"

namespace strider::ops {
namespace {

// PyTorch still skips 1-d tensors of size [0] in cat (legacy behaviour).
bool is_legacy_empty(const Tensor& t) { return t.dim() == 1 && t.sizes()[0] == 0; }

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  STRIDER_CHECK(!tensors.empty(), "cat", "expected a non-empty list of tensors");
  const Tensor* ref = nullptr;
  for (const Tensor& t : tensors) {
    STRIDER_CHECK(t.defined(), "cat", "undefined tensor in the list");
    if (!ref && !is_legacy_empty(t)) ref = &t;
  }
  if (!ref) ref = &tensors[0];
  STRIDER_CHECK(ref->dim() > 0, "cat", "zero-dimensional tensor (at position 0) cannot be concatenated");
  const int64_t d = layout::wrap_dim(dim, ref->dim(), "cat");
  // Result dtype, common format and output size.
  std::vector<PointwiseInput> inputs;
  MemoryFormat fmt = tensors[0].suggest_memory_format();
  DimVector sizes = ref->sizes().vec();
  sizes[d] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    inputs.push_back({t});
    if (t.suggest_memory_format() != fmt) fmt = MemoryFormat::Contiguous;
    if (is_legacy_empty(t)) continue;
    STRIDER_CHECK(t.dim() == ref->dim(), "cat", "tensors must have the same number of dimensions: "
                  "got ", ref->dim(), " and ", t.dim(), " (tensor ", i, " has shape ", t.sizes(), ")");
    for (int64_t k = 0; k < t.dim(); ++k)
      STRIDER_CHECK(k == d || t.sizes()[k] == ref->sizes()[k], "cat", "sizes of tensors must match "
                    "except in dimension ", d, ". Expected size ", ref->sizes()[k], " but got size ",
                    t.sizes()[k], " for tensor number ", i, " in the list (shapes ", ref->sizes(),
                    " and ", t.sizes(), ")");
    sizes[d] += t.sizes()[d];
  }
  const ScalarType dtype = result_type(inputs);
  Tensor out = make_tensor(sizes, layout::strides_for_format(sizes, fmt, "cat"), dtype);
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    if (is_legacy_empty(t)) continue;
    copy_(narrow(out, d, offset, t.sizes()[d]), t);
    offset += t.sizes()[d];
  }
  if (memory_format_check_enabled())
    for (const Tensor& t : tensors) check_memory_format_kept("cat", {&t}, out);
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  STRIDER_CHECK(!tensors.empty(), "stack", "expects a non-empty list of tensors");
  const int64_t rank = tensors[0].dim();
  const int64_t d = layout::wrap_dim(dim, rank + 1, "stack");
  for (size_t i = 1; i < tensors.size(); ++i)
    STRIDER_CHECK(tensors[i].sizes() == tensors[0].sizes(), "stack", "expects each tensor to be "
                  "equal size, but got ", tensors[0].sizes(), " at entry 0 and ", tensors[i].sizes(),
                  " at entry ", i);
  if (d < rank) {
    // PyTorch: cat along d, then view with the new dimension split out (SPEC §12).
    DimVector shape = tensors[0].sizes().vec();
    shape.insert(shape.begin() + d, static_cast<int64_t>(tensors.size()));
    return view(cat(tensors, d), shape);
  }
  std::vector<Tensor> expanded;
  for (const Tensor& t : tensors) expanded.push_back(unsqueeze(t, -1));
  return cat(expanded, rank);
}

}  // namespace strider::ops
