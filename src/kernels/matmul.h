#pragma once
// Batched matrix multiply: out[b] = a[b] @ w[b] (+ bias), for 2-d or 3-d tensors with any strides
// (a transposed operand is just swapped strides). A batch of 1 in a or w broadcasts. The ordered
// implementation list: oneDNN (float32, and bfloat16 from AVX-512 up), bfloat16 in float32 below
// it (kernels/float32_detour.h), then the reference (float64 accumulation).
#include "kernels/implementation_list.h"
#include "strider/core/tensor.h"

namespace strider::kernels {

// bias (optional) has shape [N] and is added to every row.
struct Matmul {
  Tensor out, a, w, bias;
};

const ImplementationList<Matmul>& matmul_implementations();
void matmul(const Matmul& problem, const Dispatch& d);

namespace dnnl_ops {
void matmul(const Matmul& p);
}
namespace ref {
void matmul(const Matmul& p);
}

}  // namespace strider::kernels
