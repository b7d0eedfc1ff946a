#pragma once
// Helpers shared by backward formulas.
#include <algorithm>
#include <vector>

#include "strider/autograd/record.h"
#include "strider/core/layout.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"
#include "strider/ops/pointwise.h"
#include "strider/ops/reduce.h"
#include "strider/ops/view.h"

namespace strider::autograd {

// Reduces a broadcast gradient back to `shape` (sums the broadcast dims) and casts it to `dtype`.
inline Tensor reduce_to(const Tensor& grad, IntArrayRef shape, ScalarType dtype) {
  Tensor g = grad;
  if (g.sizes() != shape) {
    const int64_t lead = g.dim() - static_cast<int64_t>(shape.size());
    DimVector dims;
    for (int64_t d = 0; d < g.dim(); ++d)
      if (d < lead || (shape[d - lead] == 1 && g.sizes()[d] != 1)) dims.push_back(d);
    if (!dims.empty()) g = ops::sum(g, dims, /*keepdim=*/true);
    g = ops::reshape(g, shape);
  }
  return g.dtype() == dtype ? g : ops::to(g, dtype);
}

// reduce_to for the gradient of input `t` (shape and dtype taken from it).
inline Tensor grad_like(const Tensor& grad, const Tensor& t) { return reduce_to(grad, t.sizes(), t.dtype()); }

// The reduced dims of an input of rank `dim` as a mask (empty list = all). A 0-d input has no
// dims to mark (dim 0 or -1 reduces it to itself, as PyTorch's).
inline std::vector<bool> reduced_dims(IntArrayRef dims, int64_t dim) {
  std::vector<bool> mask(static_cast<size_t>(dim), dims.empty());
  for (int64_t d : dims) {
    const int64_t k = layout::wrap_dim(d, std::max<int64_t>(dim, 1), "reduce");
    if (dim > 0) mask[static_cast<size_t>(k)] = true;
  }
  return mask;
}

// The elements each output of a reduction over `mask` sums.
inline int64_t reduced_count(IntArrayRef sizes, const std::vector<bool>& mask) {
  int64_t n = 1;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d]) n *= sizes[d];
  return n;
}

// Brings a reduction's gradient back to the keepdim shape (re-inserting squeezed dims).
inline Tensor unsqueeze_reduced(const Tensor& g, const std::vector<bool>& mask, bool keepdim) {
  if (keepdim) return g;
  Tensor r = g;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d]) r = ops::unsqueeze(r, static_cast<int64_t>(d));
  return r;
}

struct InputGeometry {
  DimVector sizes;
  ScalarType dtype;
  explicit InputGeometry(const Tensor& t) : sizes(t.sizes().vec()), dtype(t.dtype()) {}
};

}  // namespace strider::autograd
