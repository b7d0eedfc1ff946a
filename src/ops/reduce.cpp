// Reductions: decide the (contiguous) output, then hand the kernel a keepdim view with stride 0
// along each reduced dimension.
#include "strider/ops/reduce.h"

#include <vector>

#include "core/make_tensor.h"
#include "kernels/reduce.h"
#include "ops/kernel_dispatch.h"
#include "strider/core/layout.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"
#include "strider/ops/view.h"

namespace strider::ops {
namespace {

using kernels::ReduceOp;

std::vector<bool> reduced_mask(const Tensor& t, IntArrayRef dims, const char* op) {
  std::vector<bool> mask(t.dim(), dims.empty());
  for (int64_t d : dims) {
    int64_t w = layout::wrap_dim(d, t.dim(), op);
    STRIDER_CHECK(!mask[w] || dims.empty(), op, "dim ", w, " appears multiple times in the list of dims ", dims);
    mask[w] = true;
  }
  return mask;
}

Tensor reduce(ReduceOp op, const Tensor& t, IntArrayRef dims, bool keepdim, ScalarType out_dtype,
              kernels::ReduceArgs args = {}) {
  const char* name = kernels::name(op);
  STRIDER_CHECK(t.defined(), name, "input tensor is undefined");
  std::vector<bool> mask = reduced_mask(t, dims, name);
  DimVector out_sizes, keep_sizes;
  int64_t length = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (mask[d]) {
      length *= t.sizes()[d];
      keep_sizes.push_back(1);
      if (keepdim) out_sizes.push_back(1);
    } else {
      keep_sizes.push_back(t.sizes()[d]);
      out_sizes.push_back(t.sizes()[d]);
    }
  }
  const bool needs_element = op == ReduceOp::Max || op == ReduceOp::Min ||
                             op == ReduceOp::Argmax || op == ReduceOp::Argmin;
  STRIDER_CHECK(!needs_element || length > 0 || product(out_sizes) == 0, name,
                "cannot reduce over a zero-size dimension (input shape ", t.sizes(), ", dims ", dims,
                "): the result has no identity; reduce over non-empty dims");
  Tensor out = make_tensor(out_sizes, layout::contiguous_strides(out_sizes), out_dtype);
  // Keepdim view for the kernel: input's sizes, stride 0 where reduced.
  DimVector keep_strides = layout::contiguous_strides(keep_sizes), view_strides(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) view_strides[d] = mask[d] ? 0 : keep_strides[d];
  Tensor kview = as_strided(out, t.sizes(), view_strides, 0);
  if (length == 0) {
    fill_(out, op == ReduceOp::Prod ? 1.0 : (op == ReduceOp::Sum ? 0.0 : NAN));
    return out;
  }
  kernels::reduce({op, kview, t, args}, dispatch(name));
  return out;
}

ScalarType sum_dtype(ScalarType t) { return is_integral(t, true) ? kLong : t; }

ScalarType floating_only(const Tensor& t, const char* op) {
  STRIDER_CHECK(is_floating_point(t.dtype()), op, "could not infer output dtype: input dtype ",
                t.dtype(), " is not floating point (shape ", t.sizes(),
                "); convert with .to(kFloat) first");
  return t.dtype();
}

}  // namespace

Tensor sum(const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  ScalarType out = dtype.value_or(sum_dtype(t.dtype()));
  Tensor in = dtype && *dtype != t.dtype() ? to(t, *dtype) : t;
  return reduce(ReduceOp::Sum, in, dims, keepdim, out);
}
Tensor mean(const Tensor& t, IntArrayRef dims, bool keepdim) {
  return reduce(ReduceOp::Mean, t, dims, keepdim, floating_only(t, "mean"));
}
Tensor prod(const Tensor& t, IntArrayRef dims, bool keepdim) {
  return reduce(ReduceOp::Prod, t, dims, keepdim, sum_dtype(t.dtype()));
}
Tensor amax(const Tensor& t, IntArrayRef dims, bool keepdim) {
  return reduce(ReduceOp::Max, t, dims, keepdim, t.dtype());
}
Tensor amin(const Tensor& t, IntArrayRef dims, bool keepdim) {
  return reduce(ReduceOp::Min, t, dims, keepdim, t.dtype());
}
std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim) {
  const int64_t d = t.dim() == 0 ? 0 : layout::wrap_dim(dim, t.dim(), "max");
  if (t.dim() == 0) return {clone(t), scalar_tensor(Scalar(int64_t{0}), kLong)};
  return {reduce(ReduceOp::Max, t, {d}, keepdim, t.dtype()),
          reduce(ReduceOp::Argmax, t, {d}, keepdim, kLong)};
}
std::pair<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim) {
  const int64_t d = t.dim() == 0 ? 0 : layout::wrap_dim(dim, t.dim(), "min");
  if (t.dim() == 0) return {clone(t), scalar_tensor(Scalar(int64_t{0}), kLong)};
  return {reduce(ReduceOp::Min, t, {d}, keepdim, t.dtype()),
          reduce(ReduceOp::Argmin, t, {d}, keepdim, kLong)};
}
Tensor max(const Tensor& t) { return reduce(ReduceOp::Max, t, {}, false, t.dtype()); }
Tensor min(const Tensor& t) { return reduce(ReduceOp::Min, t, {}, false, t.dtype()); }
Tensor argmax(const Tensor& t, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) return reduce(ReduceOp::Argmax, reshape(t, {-1}), {}, false, kLong);
  return reduce(ReduceOp::Argmax, t, {*dim}, keepdim, kLong);
}
Tensor argmin(const Tensor& t, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) return reduce(ReduceOp::Argmin, reshape(t, {-1}), {}, false, kLong);
  return reduce(ReduceOp::Argmin, t, {*dim}, keepdim, kLong);
}
Tensor var(const Tensor& t, IntArrayRef dims, int64_t correction, bool keepdim) {
  kernels::ReduceArgs args;
  args.correction = correction;
  return reduce(ReduceOp::Var, t, dims, keepdim, floating_only(t, "var"), args);
}

}  // namespace strider::ops
