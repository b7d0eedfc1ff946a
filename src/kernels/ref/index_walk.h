#pragma once
// The reference kernels' loop: visit every element in logical row-major order, computing each
// operand's address from its own strides. Slow and obviously right.
#include <vector>

#include "strider/core/tensor.h"

namespace strider::kernels::ref {

template <class Fn>
void for_each_element(std::initializer_list<const Tensor*> operands, Fn fn) {
  const Tensor& out = **operands.begin();
  const int64_t ndim = out.dim(), n = out.numel();
  std::vector<char*> base;
  for (const Tensor* t : operands) base.push_back(static_cast<char*>(t->data()));
  std::vector<char*> ptrs(base.size());
  DimVector idx(ndim, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i;
    for (int64_t d = ndim - 1; d >= 0; --d) {
      idx[d] = rem % out.sizes()[d];
      rem /= out.sizes()[d];
    }
    size_t k = 0;
    for (const Tensor* t : operands) {
      int64_t off = 0;
      for (int64_t d = 0; d < ndim; ++d) off += idx[d] * t->strides()[d];
      ptrs[k] = base[k] + off * static_cast<int64_t>(t->element_size());
      ++k;
    }
    fn(ptrs.data());
  }
}

}  // namespace strider::kernels::ref
