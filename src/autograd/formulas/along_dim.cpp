// Differentiable sort, topk, cumsum, gather and scatter_add (forward: ops/along_dim.h).
#include "autograd/formulas/grad_utils.h"
#include "strider/autograd/functions.h"
#include "strider/ops/along_dim.h"

namespace strider {

using autograd::InputGeometry;
using autograd::Node;
using autograd::record;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

namespace {

// Values picked from t by `indices` along dim: each gradient goes back to where its value came
// from (scatter_add into zeros, so a position picked twice gets both).
Tensor record_picked(const char* name, const Tensor& t, Tensor values, const Tensor& indices, int64_t dim) {
  if (!autograd::any_requires_grad({&t})) return values;
  InputGeometry gi(t);
  SavedTensor si(indices);
  return record(name, {&t}, values, [=](const Grads& g, const Node&) -> Grads {
    Tensor grad = ops::scatter_add(zeros(gi.sizes, g[0].dtype()), dim, si.unpack(name), ops::contiguous(g[0]));
    return {grad.dtype() == gi.dtype ? grad : ops::to(grad, gi.dtype)};
  });
}

int64_t wrapped(int64_t dim, const Tensor& t, const char* op) {
  return layout::wrap_dim(dim, std::max<int64_t>(t.dim(), 1), op);
}

}  // namespace

std::pair<Tensor, Tensor> sort(const Tensor& t, int64_t dim, bool descending) {
  auto [values, indices] = ops::sort(t, dim, descending);
  if (t.dim() == 0) return {record_picked("SortBackward", t, values, indices, 0), indices};
  return {record_picked("SortBackward", t, values, indices, wrapped(dim, t, "sort")), indices};
}

std::pair<Tensor, Tensor> topk(const Tensor& t, int64_t k, int64_t dim, bool largest) {
  auto [values, indices] = ops::topk(t, k, dim, largest);
  return {record_picked("TopkBackward", t, values, indices, wrapped(dim, t, "topk")), indices};
}

Tensor cumsum(const Tensor& t, int64_t dim, std::optional<ScalarType> dtype) {
  Tensor out = ops::cumsum(t, dim, dtype);
  if (!autograd::any_requires_grad({&t})) return out;
  const int64_t d = wrapped(dim, t, "cumsum");
  InputGeometry gi(t);
  return record("CumsumBackward", {&t}, out, [=](const Grads& g, const Node&) -> Grads {
    // Each input adds to every later output: its gradient is the sum of theirs, from the end.
    // Along a dim of one the gradient passes as it came (PyTorch's cumsum_backward, whose
    // AccumulateGrad then gives a leaf its own strides).
    Tensor grad = g[0].numel() <= 1 || g[0].sizes()[d] == 1 ? g[0] : ops::cumsum(g[0], d, std::nullopt, /*reverse=*/true);
    return {grad.dtype() == gi.dtype ? grad : ops::to(grad, gi.dtype)};
  });
}

Tensor gather(const Tensor& t, int64_t dim, const Tensor& index) {
  return record_picked("GatherBackward", t, ops::gather(t, dim, index), index, wrapped(dim, t, "gather"));
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = ops::scatter_add(self, dim, index, src);
  if (!autograd::any_requires_grad({&self, &src})) return out;
  const int64_t d = wrapped(dim, self, "scatter_add");
  SavedTensor si(index);
  InputGeometry gs(src);
  return record("ScatterAddBackward", {&self, &src}, out, [=](const Grads& g, const Node&) -> Grads {
    // self's gradient passes through; src's is gathered from where each element went (the
    // index covers part of src at most: the rest got no use).
    Tensor picked = ops::gather(g[0], d, si.unpack("ScatterAddBackward"));
    Tensor gsrc = zeros(gs.sizes, picked.dtype());
    DimVector region = picked.sizes().vec();
    Tensor view = gsrc;
    for (int64_t k = 0; k < static_cast<int64_t>(region.size()); ++k) view = ops::narrow(view, k, 0, region[k]);
    ops::copy_(view, picked);
    return {g[0], gsrc};
  });
}

}  // namespace strider
