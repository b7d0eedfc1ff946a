#include "strider/ops/softmax.h"

#include "core/make_tensor.h"
#include "kernels/softmax.h"
#include "ops/kernel_dispatch.h"
#include "strider/core/layout.h"
#include "strider/ops/convert.h"
#include "strider/ops/view.h"

namespace strider::ops {
namespace {

Tensor softmax_impl(const Tensor& t, int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  STRIDER_CHECK(is_floating_point(t.dtype()), name, "expected a floating-point tensor but got ",
                t.dtype(), " (shape ", t.sizes(), "); convert with .to(kFloat)");
  Tensor in = t.dim() == 0 ? reshape(t, {1}) : t;
  const int64_t d = layout::wrap_dim(dim, in.dim(), name);
  in = contiguous(in);
  Tensor out = make_tensor(t.sizes().vec(), layout::contiguous_strides(t.sizes()), t.dtype());
  Tensor kout = t.dim() == 0 ? reshape(out, {1}) : out;
  kernels::softmax({kout, in, d, log}, dispatch(name));
  return out;
}

}  // namespace

Tensor softmax(const Tensor& t, int64_t dim) { return softmax_impl(t, dim, false); }
Tensor log_softmax(const Tensor& t, int64_t dim) { return softmax_impl(t, dim, true); }

}  // namespace strider::ops
