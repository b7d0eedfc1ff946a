#include "strider/ops/linear.h"

#include "core/make_tensor.h"
#include "kernels/matmul.h"
#include "ops/kernel_dispatch.h"
#include "strider/core/layout.h"
#include "strider/ops/convert.h"
#include "strider/ops/view.h"

namespace strider::ops {
namespace {

// out (2-d or 3-d, contiguous) = a @ w (+ bias).
Tensor product(const Tensor& a, const Tensor& w, const Tensor& bias, DimVector out_shape, const char* op) {
  STRIDER_CHECK(a.dtype() == w.dtype(), op, "expected both operands to have the same dtype, but got ", a.dtype(),
                " and ", w.dtype());
  STRIDER_CHECK(is_floating_point(a.dtype()), op, "matrix products need floating-point tensors, got ", a.dtype());
  Tensor out = make_tensor(out_shape, layout::contiguous_strides(out_shape), a.dtype());
  if (out.numel() == 0) return out;
  if (a.sizes()[a.dim() - 1] == 0) {  // K == 0: the sum over nothing, plus the bias
    fill_(out, 0);
    if (bias.defined()) copy_(out, expand(bias, out.sizes()));
    return out;
  }
  // One dense row, as the kernel reads it (a slice or an expanded bias was read as if it were).
  Tensor b = bias.defined() ? contiguous(bias.dtype() != a.dtype() ? to(bias, a.dtype()) : bias) : bias;
  kernels::matmul({out, a, w, b}, dispatch(op));
  return out;
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  STRIDER_CHECK(a.dim() == 2 && b.dim() == 2, "mm", "expected 2-d tensors, got ", a.sizes(), " and ", b.sizes());
  STRIDER_CHECK(a.sizes()[1] == b.sizes()[0], "mm", "mat1 and mat2 shapes cannot be multiplied (", a.sizes()[0], "x",
                a.sizes()[1], " and ", b.sizes()[0], "x", b.sizes()[1], ")");
  return product(a, b, Tensor(), {a.sizes()[0], b.sizes()[1]}, "mm");
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  STRIDER_CHECK(a.dim() == 3 && b.dim() == 3, "bmm", "expected 3-d tensors, got ", a.sizes(), " and ", b.sizes());
  STRIDER_CHECK(a.sizes()[0] == b.sizes()[0] && a.sizes()[2] == b.sizes()[1], "bmm", "batch sizes or inner "
                "dimensions do not match: ", a.sizes(), " @ ", b.sizes());
  return product(a, b, Tensor(), {a.sizes()[0], a.sizes()[1], b.sizes()[2]}, "bmm");
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  STRIDER_CHECK(weight.dim() == 2, "linear", "weight must be 2-d [out, in], got ", weight.sizes());
  STRIDER_CHECK(x.dim() >= 1 && x.sizes()[x.dim() - 1] == weight.sizes()[1], "linear", "mat1 and mat2 shapes cannot "
                "be multiplied: input ", x.sizes(), " has ", x.dim() ? x.sizes()[x.dim() - 1] : 0,
                " features, weight ", weight.sizes(), " expects ", weight.sizes()[1]);
  STRIDER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.sizes()[0] == weight.sizes()[0]), "linear",
                "bias of shape ", bias.sizes(), " does not match weight ", weight.sizes());
  const int64_t in = weight.sizes()[1], out = weight.sizes()[0];
  // Rows spelled out: -1 cannot be inferred from 0 features (PyTorch's Linear(0, n) gives bias).
  const int64_t rows = checked_numel(IntArrayRef(x.sizes().begin(), x.sizes().size() - 1), "linear");
  Tensor x2 = reshape(x, {rows, in});
  DimVector out_shape(x.sizes().begin(), x.sizes().end() - 1);
  out_shape.push_back(out);
  Tensor y = product(x2, t(weight), bias, {x2.sizes()[0], out}, "linear");
  return view(y, out_shape);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  STRIDER_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul", "both arguments need at least 1 dimension, got ",
                a.sizes(), " and ", b.sizes());
  if (a.dim() == 1 && b.dim() == 1) return view(mm(view(a, {1, -1}), view(b, {-1, 1})), {});
  if (a.dim() == 2 && b.dim() == 1) return view(mm(a, view(b, {-1, 1})), {-1});
  if (a.dim() == 1 && b.dim() == 2) return view(mm(view(a, {1, -1}), b), {-1});
  if (a.dim() == 2 && b.dim() == 2) return mm(a, b);
  // Batched: broadcast the batch dims, fold them into one.
  Tensor A = a.dim() == 1 ? unsqueeze(a, 0) : a, B = b.dim() == 1 ? unsqueeze(b, 1) : b;
  const int64_t M = A.sizes()[A.dim() - 2], K = A.sizes()[A.dim() - 1], N = B.sizes()[B.dim() - 1];
  STRIDER_CHECK(B.sizes()[B.dim() - 2] == K, "matmul", "inner dimensions do not match: ", a.sizes(), " @ ", b.sizes());
  DimVector batch_a(A.sizes().begin(), A.sizes().end() - 2), batch_b(B.sizes().begin(), B.sizes().end() - 2);
  DimVector batch = layout::broadcast_shapes(batch_a, batch_b, "matmul");
  DimVector ea = batch, eb = batch;
  ea.push_back(M);
  ea.push_back(K);
  eb.push_back(K);
  eb.push_back(N);
  // The batch count spelled out: -1 cannot be inferred when a size is 0.
  const int64_t nb = checked_numel(batch, "matmul");
  Tensor A3 = reshape(expand(A, ea), {nb, M, K}), B3 = reshape(expand(B, eb), {nb, K, N});
  Tensor out = bmm(A3, B3);
  DimVector out_shape = batch;
  if (a.dim() > 1) out_shape.push_back(M);
  if (b.dim() > 1) out_shape.push_back(N);
  return reshape(out, out_shape);
}

}  // namespace strider::ops
