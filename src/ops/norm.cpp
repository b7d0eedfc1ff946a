// Batch normalization: layout decision, running statistics, and the kernel list (oneDNN for
// float32/bfloat16 data, composed ops for the rest).
#include "strider/ops/norm.h"

#include "kernels/dnnl/context.h"
#include "kernels/norm.h"
#include "ops/kernel_list.h"
#include "ops/make_tensor.h"
#include "strider/core/layout.h"
#include "strider/ops/check_mode.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"
#include "strider/ops/pointwise.h"
#include "strider/ops/reduce.h"
#include "strider/ops/view.h"

namespace strider::ops {
namespace {

DimVector reduce_dims(const Tensor& x) {
  DimVector d = {0};
  for (int64_t i = 2; i < x.dim(); ++i) d.push_back(i);
  return d;
}

// [C] -> [1, C, 1, ...] to broadcast against x.
Tensor per_channel(const Tensor& v, int64_t dim) {
  DimVector shape(dim, 1);
  shape[1] = v.sizes()[0];
  return reshape(v, shape);
}

Tensor as_float(const Tensor& t) { return t.defined() && t.dtype() != kFloat ? to(t, kFloat) : contiguous(t); }

void check(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm, const Tensor& rv, bool training) {
  STRIDER_CHECK(x.dim() >= 2, "batch_norm", "expected an input of at least 2 dimensions [N, C, ...], got ", x.sizes());
  STRIDER_CHECK(is_floating_point(x.dtype()), "batch_norm", "expected a floating-point input, got ", x.dtype());
  const int64_t c = x.sizes()[1];
  for (const auto* t : {&w, &b, &rm, &rv})
    STRIDER_CHECK(!t->defined() || (t->dim() == 1 && t->sizes()[0] == c), "batch_norm",
                  "expected per-channel tensors of shape [", c, "] for input ", x.sizes(), ", got ", t->sizes());
  STRIDER_CHECK(training || (rm.defined() && rv.defined()), "batch_norm",
                "running_mean and running_var must be defined in evaluation mode");
  STRIDER_CHECK(w.defined() == b.defined(), "batch_norm", "weight and bias must both be given or both omitted");
  if (training) {
    int64_t per_channel_count = x.numel() / std::max<int64_t>(c, 1);
    STRIDER_CHECK(per_channel_count > 1 || x.numel() == 0, "batch_norm", "expected more than 1 value per channel "
                  "when training, got input size ", x.sizes());
  }
}

}  // namespace

MemoryFormat batch_norm_memory_format(const Tensor& input, bool params_contiguous) {
  if (params_contiguous) {
    if (input.is_contiguous()) return MemoryFormat::Contiguous;
    if (input.is_contiguous(MemoryFormat::ChannelsLast)) return MemoryFormat::ChannelsLast;
  }
  return input.suggest_memory_format();
}

BatchNormResult batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                           const Tensor& running_var, bool training, double momentum, double eps) {
  check(x, weight, bias, running_mean, running_var, training);
  const int64_t c = x.sizes()[1];
  // Statistics in float32 (float64 for float64 data, so gradients check to full precision).
  const ScalarType stat_t = x.dtype() == kDouble ? kDouble : kFloat;
  if (x.numel() == 0) return {clone(x), zeros({c}, stat_t), ones({c}, stat_t)};
  bool params_contig = true;
  for (const auto* t : {&weight, &bias, &running_mean, &running_var}) params_contig &= !t->defined() || t->is_contiguous();
  const MemoryFormat fmt = batch_norm_memory_format(x, params_contig);
  Tensor out = make_tensor(x.sizes().vec(), layout::strides_for_format(x.sizes(), fmt, "batch_norm"), x.dtype());
  Tensor mean = empty({c}, stat_t), var = empty({c}, stat_t);
  if (!training) {
    copy_(mean, running_mean);
    copy_(var, running_var);
  }
  // Same physical order as `out` (an ambiguous input may carry other size-1 strides).
  Tensor in_c = as_strided(contiguous(x, fmt), out.sizes(), out.strides());
  const bool dnnl = kernels::dnnl_ops::supports(x.dtype()) && x.dim() >= 3 && x.dim() <= 5;
  auto composed = [&] {
    Tensor xd = to(in_c, kDouble);
    DimVector dims = reduce_dims(x);
    if (training) {
      copy_(mean, ops::mean(xd, dims));
      copy_(var, ops::var(xd, dims, 0));
    }
    Tensor invstd = rsqrt(add(to(var, kDouble), eps));
    Tensor y = mul(sub(xd, per_channel(to(mean, kDouble), x.dim())), per_channel(invstd, x.dim()));
    if (weight.defined()) y = add(mul(y, per_channel(to(weight, kDouble), x.dim())), per_channel(to(bias, kDouble), x.dim()));
    copy_(out, y);
  };
  run_kernel("batch_norm", [&] {
    if (dnnl) {
      Tensor w = weight.defined() ? as_float(weight) : Tensor(), b = bias.defined() ? as_float(bias) : Tensor();
      kernels::dnnl_ops::batch_norm_forward(out, in_c, w, b, mean, var, training, eps);
    } else {
      composed();
    }
  }, composed);
  if (training && running_mean.defined()) {
    // running = (1 - momentum) * running + momentum * batch, with the unbiased batch variance.
    const double n = static_cast<double>(x.numel() / c);
    copy_(running_mean, add(mul(running_mean, 1.0 - momentum), to(mul(mean, momentum), running_mean.dtype())));
    copy_(running_var, add(mul(running_var, 1.0 - momentum), to(mul(var, momentum * n / std::max(n - 1.0, 1.0)), running_var.dtype())));
  }
  check_memory_format_kept("batch_norm", {&x}, out);
  return {out, mean, var};
}

std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                                       const Tensor& mean, const Tensor& var, bool training,
                                                       double eps, std::array<bool, 3> mask) {
  const int64_t c = x.sizes()[1];
  if (x.numel() == 0)
    return {mask[0] ? zeros_like(x) : Tensor(), mask[1] && weight.defined() ? zeros({c}, weight.dtype()) : Tensor(),
            mask[2] && weight.defined() ? zeros({c}, weight.dtype()) : Tensor()};
  const MemoryFormat fmt = batch_norm_memory_format(x, true);
  Tensor gi = make_tensor(x.sizes().vec(), layout::strides_for_format(x.sizes(), fmt, "batch_norm"), x.dtype());
  Tensor in_c = as_strided(contiguous(x, fmt), gi.sizes(), gi.strides());
  Tensor go = as_strided(contiguous(grad_out.dtype() == x.dtype() ? grad_out : to(grad_out, x.dtype()), fmt), gi.sizes(), gi.strides());
  const bool dnnl = kernels::dnnl_ops::supports(x.dtype()) && x.dim() >= 3 && x.dim() <= 5;
  const ScalarType param_t = dnnl || !weight.defined() ? kFloat : weight.dtype();
  Tensor gw = weight.defined() ? empty({c}, param_t) : Tensor(), gb = weight.defined() ? empty({c}, param_t) : Tensor();
  auto composed = [&] {
    const int64_t d = x.dim();
    DimVector dims = reduce_dims(x);
    Tensor xd = to(in_c, kDouble), gd = to(go, kDouble);
    Tensor invstd = per_channel(rsqrt(add(to(var, kDouble), eps)), d);
    Tensor xhat = mul(sub(xd, per_channel(to(mean, kDouble), d)), invstd);
    Tensor sum_g = sum(gd, dims), sum_gx = sum(mul(gd, xhat), dims);
    Tensor w = weight.defined() ? per_channel(to(weight, kDouble), d) : full({1}, 1.0, kDouble);
    Tensor dx;
    if (training) {
      const double n = static_cast<double>(x.numel() / c);
      dx = mul(mul(w, invstd), sub(sub(gd, div(per_channel(sum_g, d), n)), mul(xhat, div(per_channel(sum_gx, d), n))));
    } else {
      dx = mul(mul(gd, w), invstd);
    }
    copy_(gi, dx);
    if (weight.defined()) {
      copy_(gw, sum_gx);
      copy_(gb, sum_g);
    }
  };
  run_kernel("batch_norm_backward", [&] {
    if (dnnl) {
      Tensor w = weight.defined() ? as_float(weight) : Tensor();
      kernels::dnnl_ops::batch_norm_backward(gi, gw, gb, go, in_c, w, mean, var, training, eps);
    } else {
      composed();
    }
  }, composed);
  auto cast = [&](const Tensor& t) { return t.defined() && weight.defined() && weight.dtype() != kFloat ? to(t, weight.dtype()) : t; };
  return {mask[0] ? gi : Tensor(), mask[1] ? cast(gw) : Tensor(), mask[2] ? cast(gb) : Tensor()};
}

bool layer_norm_supported(ScalarType dtype) { return kernels::dnnl_ops::supports(dtype); }

LayerNormResult layer_norm(const Tensor& input, int64_t n, const Tensor& weight, const Tensor& bias, double eps) {
  STRIDER_CHECK(layer_norm_supported(input.dtype()), "layer_norm", "the oneDNN path supports float32 and bfloat16, got ",
                input.dtype());
  STRIDER_CHECK(n > 0 && input.numel() % n == 0, "layer_norm", "cannot normalize ", input.sizes(), " over ", n, " elements");
  Tensor x = reshape(contiguous(input), {-1, n});
  const int64_t rows = x.sizes()[0];
  Tensor out = empty(x.sizes(), input.dtype()), mean = empty({rows}), var = empty({rows});
  if (rows > 0)
    kernels::dnnl_ops::layer_norm_forward(out, x, weight.defined() ? as_float(reshape(weight, {n})) : Tensor(),
                                          bias.defined() ? as_float(reshape(bias, {n})) : Tensor(), mean, var, eps);
  return {view(out, input.sizes()), mean, var};
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& grad_out, const Tensor& input, int64_t n,
                                                       const Tensor& weight, const Tensor& mean, const Tensor& var,
                                                       double eps, std::array<bool, 3> mask) {
  Tensor x = reshape(contiguous(input), {-1, n});
  Tensor go = reshape(contiguous(grad_out.dtype() == input.dtype() ? grad_out : to(grad_out, input.dtype())), {-1, n});
  Tensor gi = empty(x.sizes(), input.dtype());
  Tensor gw = weight.defined() ? empty({n}) : Tensor(), gb = weight.defined() ? empty({n}) : Tensor();
  kernels::dnnl_ops::layer_norm_backward(gi, gw, gb, go, x, weight.defined() ? as_float(reshape(weight, {n})) : Tensor(),
                                         mean, var, eps);
  auto back = [&](const Tensor& t) {
    return t.defined() && weight.defined() ? view(weight.dtype() == kFloat ? t : to(t, weight.dtype()), weight.sizes()) : t;
  };
  return {mask[0] ? view(gi, input.sizes()) : Tensor(), mask[1] ? back(gw) : Tensor(), mask[2] ? back(gb) : Tensor()};
}

}  // namespace strider::ops
