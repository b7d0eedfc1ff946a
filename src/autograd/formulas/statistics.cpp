// std, logsumexp and vector norms, differentiable: composed from the reductions and pointwise
// ops forward, with PyTorch 1.13's backward formulas, which define the gradient where the
// composition's chain rule gives 0 / 0 (a zero std or norm, an infinite maximum).
#include <cmath>
#include <limits>

#include "autograd/formulas/grad_utils.h"
#include "strider/autograd/functions.h"

namespace strider {

using autograd::Node;
using autograd::record;
using autograd::reduced_count;
using autograd::reduced_dims;
using autograd::SavedTensor;
using autograd::unsqueeze_reduced;
using Grads = std::vector<Tensor>;

namespace {

// The output with its reduced dims put back (so it broadcasts against the input).
Tensor kept(const Tensor& y, const std::vector<bool>& mask, bool keepdim) { return unsqueeze_reduced(y, mask, keepdim); }

}  // namespace

Tensor std(const Tensor& t, IntArrayRef dims, int64_t correction, bool keepdim) {
  // bfloat16 and float16 take the root of the float32 variance, rounding once, as PyTorch's.
  const bool reduced = t.dtype() == kBFloat16 || t.dtype() == kHalf;
  Tensor out = reduced ? ops::to(ops::sqrt(ops::var(ops::to(t, kFloat), dims, correction, keepdim)), t.dtype())
                       : ops::sqrt(ops::var(t, dims, correction, keepdim));
  if (!autograd::any_requires_grad({&t})) return out;
  const auto mask = reduced_dims(dims, t.dim());
  const double denom = static_cast<double>(reduced_count(t.sizes(), mask) - correction);
  const DimVector dv = dims.vec();
  SavedTensor sx(t), sy(out);
  return record("StdBackward", {&t}, out, [=](const Grads& g, const Node&) -> Grads {
    const Tensor x = sx.unpack("StdBackward"), y = kept(sy.unpack("StdBackward"), mask, keepdim);
    // d std = d var / (2 std), taken as 0 where std is 0 (PyTorch's masked_fill).
    Tensor gv = ops::where(ops::eq(y, 0), Scalar(0.0), ops::div(kept(g[0], mask, keepdim), ops::mul(y, 2.0)));
    Tensor centered = ops::sub(x, ops::mean(x, dv, true));
    return {ops::mul(centered, ops::mul(gv, 2.0 / denom))};
  });
}

Tensor logsumexp(const Tensor& t, IntArrayRef dims, bool keepdim) {
  // Integers compute in the default float dtype, as PyTorch's.
  const Tensor x = is_floating_point(t.dtype()) ? t : ops::to(t, kFloat);
  const auto mask = reduced_dims(dims, x.dim());
  const DimVector dv = dims.vec();
  Tensor out;
  {
    autograd::NoGradGuard no_grad;
    // Shifted by the maximum so exp cannot overflow; an infinite maximum shifts by 0.
    Tensor m = x.numel() == 0 ? ops::sum(x, dv, true) : ops::amax(x, dv, true);  // empty: 0s, log(0) = -inf
    m = ops::where(ops::eq(ops::abs(m), std::numeric_limits<double>::infinity()), Scalar(0.0), m);
    Tensor s = ops::log(ops::sum(ops::exp(ops::sub(x, m)), dv, true));
    out = ops::add(s, m);
    if (!keepdim)
      for (int64_t d = static_cast<int64_t>(mask.size()) - 1; d >= 0; --d)
        if (mask[d]) out = ops::squeeze(out, d);
  }
  if (!autograd::any_requires_grad({&x})) return out;
  SavedTensor sx(x), sy(out);
  const ScalarType dtype = t.dtype();
  return record("LogsumexpBackward", {&t}, out, [=](const Grads& g, const Node&) -> Grads {
    const Tensor xv = sx.unpack("LogsumexpBackward"), y = kept(sy.unpack("LogsumexpBackward"), mask, keepdim);
    Tensor grad = ops::mul(kept(g[0], mask, keepdim), ops::exp(ops::sub(xv, y)));
    return {grad.dtype() == dtype ? grad : ops::to(grad, dtype)};
  });
}

Tensor norm(const Tensor& t, double p, IntArrayRef dims, bool keepdim) {
  STRIDER_CHECK(is_floating_point(t.dtype()), "norm", "needs a floating-point tensor, got ", t.dtype(),
                " (PyTorch: 'linalg.vector_norm: Expected a floating point or complex tensor as input')");
  STRIDER_CHECK(!std::isnan(p), "norm", "the order p is NaN");
  const DimVector dv = dims.vec();
  const Tensor a = ops::abs(t);
  Tensor out;
  {
    autograd::NoGradGuard no_grad;
    if (p == 2) out = ops::sqrt(ops::sum(ops::mul(a, a), dv, keepdim));
    else if (p == 1) out = ops::sum(a, dv, keepdim);
    else if (p == 0) out = ops::sum(ops::to(ops::ne(t, 0), t.dtype()), dv, keepdim);
    else if (std::isinf(p)) {
      STRIDER_CHECK(t.numel() > 0, "norm", "an infinity norm of an empty tensor has no value (PyTorch refuses it too)");
      out = p > 0 ? ops::amax(a, dv, keepdim) : ops::amin(a, dv, keepdim);
    } else {
      out = ops::pow(ops::sum(ops::pow(a, p), dv, keepdim), 1.0 / p);
    }
  }
  if (!autograd::any_requires_grad({&t})) return out;
  const auto mask = reduced_dims(dims, t.dim());
  SavedTensor sx(t), sy(out);
  return record("NormBackward", {&t}, out, [=](const Grads& g, const Node&) -> Grads {
    const Tensor x = sx.unpack("NormBackward"), y = kept(sy.unpack("NormBackward"), mask, keepdim), gk = kept(g[0], mask, keepdim);
    if (p == 0) return {zeros(x.sizes(), x.dtype())};
    if (p == 1) return {ops::mul(ops::sign(x), gk)};
    if (std::isinf(p)) {  // to the extreme elements, split evenly among ties
      Tensor hit = ops::to(ops::eq(ops::abs(x), y), x.dtype());
      return {ops::mul(ops::mul(ops::sign(x), hit), ops::div(gk, ops::sum(hit, dv, true)))};
    }
    // PyTorch 1.13's norm_backward: p < 1: sgn(x) |x|^(p-1) (0 at x = 0) g norm^(1-p); else
    // sgn(x) |x|^(p-1) (x |x|^(p-2) from p = 2 on) g / norm^(p-1), 0 where the norm is 0.
    if (p < 1) {
      Tensor s = ops::where(ops::eq(x, 0), Scalar(0.0), ops::mul(ops::sign(x), ops::pow(ops::abs(x), p - 1)));
      return {ops::mul(ops::mul(s, gk), ops::pow(y, 1 - p))};
    }
    Tensor scale = ops::where(ops::eq(y, 0), Scalar(0.0), ops::div(gk, p == 2 ? y : ops::pow(y, p - 1)));
    Tensor scaled = p == 2 ? x
                    : p < 2 ? ops::mul(ops::sign(x), ops::pow(ops::abs(x), p - 1))
                            : ops::mul(x, ops::pow(ops::abs(x), p - 2));
    return {ops::mul(scaled, scale)};
  });
}

}  // namespace strider
