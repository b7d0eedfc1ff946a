#include "kernels/strided_loop.h"

#include <algorithm>
#include <numeric>

namespace strider::kernels {

LoopPlan make_loop_plan(std::initializer_list<const Tensor*> operands) {
  LoopPlan plan;
  plan.num_operands = static_cast<int>(operands.size());
  STRIDER_INTERNAL_ASSERT(plan.num_operands >= 1 && plan.num_operands <= kMaxOperands);
  const Tensor& out = **operands.begin();
  const int64_t ndim = out.dim();
  plan.numel = out.numel();

  // Innermost first by the output's strides; ties keep the logical order (last dim inside).
  DimVector order;
  for (int64_t d = ndim - 1; d >= 0; --d)
    if (out.size(d) != 1) order.push_back(d);
  // Insertion sort: stable, and unlike std::stable_sort it never allocates (ranks are tiny).
  for (size_t i = 1; i < order.size(); ++i)
    for (size_t j = i; j > 0 && out.strides()[order[j]] < out.strides()[order[j - 1]]; --j)
      std::swap(order[j], order[j - 1]);

  int k = 0;
  for (const Tensor* t : operands) {
    STRIDER_INTERNAL_ASSERT(t->sizes() == out.sizes(), "operand ", t->sizes(), " vs output ",
                            out.sizes());
    plan.base[k] = static_cast<char*>(t->data());
    ++k;
  }
  // Merge dimension order[i+1] into the current run when every operand steps through it as a
  // continuation of the run.
  for (size_t i = 0; i < order.size(); ++i) {
    int64_t d = order[i];
    int64_t size = out.sizes()[d];
    bool merge = !plan.shape.empty();
    if (merge) {
      int kk = 0;
      for (const Tensor* t : operands) {
        int64_t es = static_cast<int64_t>(t->element_size());
        if (t->strides()[d] * es != plan.byte_strides[kk].back() * plan.shape.back()) merge = false;
        ++kk;
      }
    }
    if (merge) {
      plan.shape.back() *= size;
      continue;
    }
    plan.shape.push_back(size);
    int kk = 0;
    for (const Tensor* t : operands) {
      plan.byte_strides[kk].push_back(t->strides()[d] * static_cast<int64_t>(t->element_size()));
      ++kk;
    }
  }
  if (plan.shape.empty() && plan.numel == 1) {  // all dims of size 1 (or 0-d): one element
    plan.shape.push_back(1);
    for (int kk = 0; kk < plan.num_operands; ++kk) plan.byte_strides[kk].push_back(0);
  }
  return plan;
}

}  // namespace strider::kernels
