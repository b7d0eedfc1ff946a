// The attention implementation lists: the blocked float32 kernel, then the float64 oracle.
#include "kernels/attention.h"

namespace strider::kernels {

// The cpu kernel's reasons live here, not in its source: that is compiled once per ISA level.
namespace cpu {
std::string attention_rejects(const std::vector<const Tensor*>& tensors) {
  if (tensors.front()->dtype() == kDouble) return "float64 (the reference accumulates in float64)";
  for (const Tensor* t : tensors)
    if (t->dim() == 4 && t->sizes()[3] > 1 && t->strides()[3] != 1) return "a row with non-unit element stride";
  return {};
}
}  // namespace cpu

const ImplementationList<AttentionForward>& attention_forward_implementations() {
  static const ImplementationList<AttentionForward> list = {
      {"cpu", [](const AttentionForward& p) { return cpu::attention_rejects({&p.q, &p.k, &p.v, &p.out}); },
       cpu::attention_forward},
      {"ref", [](const AttentionForward&) { return std::string(); }, ref::attention_forward},
  };
  return list;
}

const ImplementationList<AttentionBackward>& attention_backward_implementations() {
  static const ImplementationList<AttentionBackward> list = {
      {"cpu",
       [](const AttentionBackward& p) {
         return cpu::attention_rejects({&p.q, &p.k, &p.v, &p.out, &p.dout, &p.dq, &p.dk, &p.dv});
       },
       cpu::attention_backward},
      {"ref", [](const AttentionBackward&) { return std::string(); }, ref::attention_backward},
  };
  return list;
}

void attention_forward(const AttentionForward& p, const Dispatch& d) {
  run_first("scaled_dot_product_attention", attention_forward_implementations(), p, d);
}
void attention_backward(const AttentionBackward& p, const Dispatch& d) {
  run_first("scaled_dot_product_attention_backward", attention_backward_implementations(), p, d);
}

}  // namespace strider::kernels
