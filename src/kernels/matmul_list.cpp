// The matrix-product implementation list: oneDNN where it computes the dtype, then the reference.
#include "kernels/dnnl/context.h"
#include "kernels/matmul.h"

namespace strider::kernels {

const ImplementationList<Matmul>& matmul_implementations() {
  static const ImplementationList<Matmul> list = {
      {"onednn", [](const Matmul& p) { return dnnl_ops::rejects_dtype(p.out.dtype()); }, dnnl_ops::matmul},
      {"ref", [](const Matmul&) { return std::string(); }, ref::matmul},
  };
  return list;
}

void matmul(const Matmul& problem, const Dispatch& d) { run_first("matmul", matmul_implementations(), problem, d); }

}  // namespace strider::kernels
