// The attention implementation lists: the blocked kernel with bfloat16 products (on AMX tiles, or
// AVX512_BF16's vdpbf16ps), with float32 products, then the float64 oracle.
#include "kernels/attention.h"
#include "kernels/cpu_isa.h"

namespace strider::kernels {

// The cpu kernel's reasons live here, not in its source: that is compiled once per ISA level.
namespace cpu {
std::string attention_rejects(const std::vector<const Tensor*>& tensors) {
  if (tensors.front()->dtype() == kDouble) return "float64 (the reference accumulates in float64)";
  for (const Tensor* t : tensors)
    if (t->dim() == 4 && t->sizes()[3] > 1 && t->strides()[3] != 1) return "a row with non-unit element stride";
  return {};
}
std::string attention_bf16_rejects(const std::vector<const Tensor*>& tensors) {
  if (tensors.front()->dtype() != kBFloat16) return "bfloat16 storage only (other dtypes take the float32 products)";
  if (!cpu_has(Isa::avx512_bf16)) return "needs AVX512_BF16 (vdpbf16ps), which this CPU (or STRIDER_MAX_CPU_ISA) lacks";
  // Where vdpbf16ps runs at half the FMA's rate, the float32 products are the faster (docs/benchmarks.md).
  if (cpu_reports_amx()) return "this CPU (with AMX) runs vdpbf16ps slower than the float32 products";
  return attention_rejects(tensors);
}
std::string attention_amx_rejects(const std::vector<const Tensor*>& tensors) {
  if (tensors.front()->dtype() != kBFloat16) return "bfloat16 storage only (other dtypes take the float32 products)";
  if (!cpu_has(Isa::amx_bf16))
    return "needs AMX-BF16 tiles this process may use, which this CPU (or Linux, or STRIDER_MAX_CPU_ISA) does not grant";
  return attention_rejects(tensors);
}
}  // namespace cpu

const ImplementationList<AttentionForward>& attention_forward_implementations() {
  static const ImplementationList<AttentionForward> list = {
      {"cpu_amx", [](const AttentionForward& p) { return cpu::attention_amx_rejects({&p.q, &p.k, &p.v, &p.out}); },
       cpu::attention_forward_amx},
      {"cpu_bf16", [](const AttentionForward& p) { return cpu::attention_bf16_rejects({&p.q, &p.k, &p.v, &p.out}); },
       cpu::attention_forward_bf16},
      {"cpu", [](const AttentionForward& p) { return cpu::attention_rejects({&p.q, &p.k, &p.v, &p.out}); },
       cpu::attention_forward},
      {"ref", [](const AttentionForward&) { return std::string(); }, ref::attention_forward},
  };
  return list;
}

const ImplementationList<AttentionBackward>& attention_backward_implementations() {
  static const ImplementationList<AttentionBackward> list = {
      {"cpu_amx",
       [](const AttentionBackward& p) {
         return cpu::attention_amx_rejects({&p.q, &p.k, &p.v, &p.out, &p.dout, &p.dq, &p.dk, &p.dv});
       },
       cpu::attention_backward_amx},
      {"cpu_bf16",
       [](const AttentionBackward& p) {
         return cpu::attention_bf16_rejects({&p.q, &p.k, &p.v, &p.out, &p.dout, &p.dq, &p.dk, &p.dv});
       },
       cpu::attention_backward_bf16},
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
