// The matrix-product implementation list: oneDNN where it computes the dtype, then bfloat16 in
// float32 where oneDNN has no bfloat16 kernels for the CPU, then the reference.
#include "kernels/dnnl/context.h"
#include "kernels/float32_detour.h"
#include "kernels/matmul.h"

namespace strider::kernels {
namespace {

void matmul_in_float32(const Matmul& p) {
  Matmul q = p;
  q.out = float32_empty(p.out);
  q.a = float32_copy(p.a);
  q.w = float32_copy(p.w);
  q.bias = float32_copy(p.bias);
  dnnl_ops::matmul(q);
  round_into(p.out, q.out);
}

}  // namespace

const ImplementationList<Matmul>& matmul_implementations() {
  static const ImplementationList<Matmul> list = {
      {"onednn", [](const Matmul& p) { return dnnl_ops::rejects_dtype(p.out.dtype()); }, dnnl_ops::matmul},
      {"onednn_f32", [](const Matmul& p) { return float32_detour_rejects({&p.out, &p.a, &p.w}); }, matmul_in_float32},
      {"ref", [](const Matmul&) { return std::string(); }, ref::matmul},
  };
  return list;
}

void matmul(const Matmul& problem, const Dispatch& d) { run_first("matmul", matmul_implementations(), problem, d); }

}  // namespace strider::kernels
