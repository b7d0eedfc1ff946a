// Batch and layer normalization: argument checks, the layout decision, running statistics and
// parameter dtypes; the kernels' implementation lists (kernels/norm.h) compute.
#include "strider/ops/norm.h"

#include "core/make_tensor.h"
#include "kernels/norm.h"
#include "ops/kernel_dispatch.h"
#include "strider/core/layout.h"
#include "strider/ops/check_mode.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"
#include "strider/ops/pointwise.h"
#include "strider/ops/reduce.h"
#include "strider/ops/view.h"

namespace strider::ops {
namespace {

// A parameter or statistic in the kernels' dtype (kernels::norm_stat_dtype), 1-d and dense.
Tensor as_stat(const Tensor& t, ScalarType stat_t, int64_t n) {
  if (!t.defined()) return t;
  Tensor flat = reshape(t, {n});
  return flat.dtype() != stat_t ? to(flat, stat_t) : contiguous(flat);
}

// A gradient computed in the statistics' dtype, returned in its parameter's dtype and shape.
Tensor as_param_grad(const Tensor& g, const Tensor& param) {
  if (!g.defined() || !param.defined()) return g;
  return view(g.dtype() == param.dtype() ? g : to(g, param.dtype()), param.sizes());
}

void check(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm, const Tensor& rv, bool training) {
  STRIDER_CHECK(x.dim() >= 2, "batch_norm", "expected an input of at least 2 dimensions [N, C, ...], got ", x.sizes());
  STRIDER_CHECK(is_floating_point(x.dtype()), "batch_norm", "expected a floating-point input, got ", x.dtype());
  const int64_t c = x.sizes()[1];
  for (const auto* t : {&w, &b, &rm, &rv})
    STRIDER_CHECK(!t->defined() || (t->dim() == 1 && t->sizes()[0] == c), "batch_norm",
                  "expected per-channel tensors of shape [", c, "] for input ", x.sizes(), ", got ", t->sizes());
  STRIDER_CHECK(training || (rm.defined() && rv.defined()), "batch_norm",
                "running_mean and running_var must be defined in evaluation mode");
  if (training) {
    int64_t per_channel_count = x.numel() / std::max<int64_t>(c, 1);
    STRIDER_CHECK(per_channel_count > 1 || x.numel() == 0, "batch_norm", "expected more than 1 value per channel "
                  "when training, got input size ", x.sizes());
  }
}

// PyTorch takes either affine parameter alone; the kernels take both or neither, so the missing
// one becomes its identity (weight 1, bias 0), in the given one's dtype.
std::pair<Tensor, Tensor> both_affine(const Tensor& weight, const Tensor& bias, int64_t c) {
  if (weight.defined() == bias.defined()) return {weight, bias};
  if (weight.defined()) return {weight, zeros({c}, weight.dtype())};
  return {ones({c}, bias.dtype()), bias};
}

}  // namespace

MemoryFormat batch_norm_memory_format(const Tensor& input, bool params_contiguous) {
  if (params_contiguous) {
    if (input.is_contiguous()) return MemoryFormat::Contiguous;
    if (input.is_contiguous(MemoryFormat::ChannelsLast)) return MemoryFormat::ChannelsLast;
  }
  return input.suggest_memory_format();
}

MemoryFormat batch_norm_backward_memory_format(const Tensor& input, const Tensor& grad_out) {
  // PyTorch 1.13's backward: its fast path, taken when input and gradient are both dense (contiguous
  // or channels-last) and suggest one format, allocates as the forward does; otherwise grad_input
  // takes the input's suggested format (so an NC11 or N1HW channels-last input whose gradient is
  // an expanded one gets channels-last strides, not the forward's contiguous ones).
  auto dense = [](const Tensor& t) {
    return t.is_contiguous() || t.is_contiguous(MemoryFormat::ChannelsLast) || t.is_contiguous(MemoryFormat::ChannelsLast3d);
  };
  if (dense(input) && dense(grad_out) && input.suggest_memory_format() == grad_out.suggest_memory_format())
    return batch_norm_memory_format(input, true);
  return input.suggest_memory_format();
}

BatchNormResult batch_norm(const Tensor& x, const Tensor& given_weight, const Tensor& given_bias, const Tensor& running_mean,
                           const Tensor& running_var, bool training, double momentum, double eps, bool relu,
                           const Tensor& residual) {
  check(x, given_weight, given_bias, running_mean, running_var, training);
  const auto [weight, bias] = both_affine(given_weight, given_bias, x.sizes()[1]);
  STRIDER_CHECK(!residual.defined() || (residual.sizes() == x.sizes() && residual.dtype() == x.dtype()), "batch_norm",
                "the residual must have the input's shape and dtype, ", x.sizes(), " ", x.dtype(), "; got ",
                residual.sizes(), " ", residual.dtype(),
                " (the fused add does not broadcast: expand it to the input's shape and convert it to its dtype "
                "first, or add it to the output yourself)");
  const int64_t c = x.sizes()[1];
  const ScalarType stat_t = kernels::norm_stat_dtype(x.dtype());
  if (x.numel() == 0)
    return {.out = clone(x), .mean = zeros({c}, stat_t), .var = ones({c}, stat_t), .relu = relu,
            .residual_added = residual.defined()};
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
  const char* computed_by = kernels::batch_norm_forward({.out = out, .in = in_c, .weight = as_stat(weight, stat_t, c), .bias = as_stat(bias, stat_t, c),
                               .mean = mean, .var = var, .training = training, .eps = eps, .relu = relu,
                               .residual = residual.defined() ? as_strided(contiguous(residual, fmt), out.sizes(), out.strides())
                                                              : Tensor()},
                              dispatch("batch_norm"));
  if (training && running_mean.defined()) {
    // running = (1 - momentum) * running + momentum * batch, with the unbiased batch variance.
    const double n = static_cast<double>(x.numel() / c);
    copy_(running_mean, add(mul(running_mean, 1.0 - momentum), to(mul(mean, momentum), running_mean.dtype())));
    copy_(running_var, add(mul(running_var, 1.0 - momentum), to(mul(var, momentum * n / std::max(n - 1.0, 1.0)), running_var.dtype())));
  }
  check_memory_format_kept("batch_norm", {&x}, out);
  return {.out = out, .mean = mean, .var = var, .computed_by = computed_by, .relu = relu,
          .residual_added = residual.defined(),
          .relu_mask_from_input = relu && kernels::batch_norm_backward_recomputes_relu_mask(computed_by)};
}

namespace {

// Both backwards: with relu_out defined, batch_norm's with relu (and the residual, when defined).
// A bias's gradient (mask[2]) is asked for only where the forward had a bias: with no weight, the
// weight was 1 (both_affine).
BatchNormReluGrads backward(const Tensor& grad_out, const Tensor& x, const Tensor& given_weight, const Tensor& given_bias,
                            const Tensor& residual, bool with_residual, const Tensor& mean, const Tensor& var,
                            const Tensor& relu_out, const char* relu_out_by, bool training, double eps,
                            std::array<bool, 4> mask) {
  const int64_t c = x.sizes()[1];
  const Tensor unit_weight = !given_weight.defined() && mask[2] ? ones({c}, kernels::norm_stat_dtype(x.dtype())) : Tensor();
  const auto [weight, bias] = both_affine(given_weight.defined() ? given_weight : unit_weight, given_bias, c);
  if (x.numel() == 0)
    return {mask[0] ? zeros_like(x) : Tensor(), mask[1] && weight.defined() ? zeros({c}, weight.dtype()) : Tensor(),
            mask[2] && weight.defined() ? zeros({c}, weight.dtype()) : Tensor(),
            mask[3] && with_residual ? zeros_like(x) : Tensor()};
  const MemoryFormat fmt = batch_norm_backward_memory_format(x, grad_out);
  Tensor gi = make_tensor(x.sizes().vec(), layout::strides_for_format(x.sizes(), fmt, "batch_norm"), x.dtype());
  Tensor in_c = as_strided(contiguous(x, fmt), gi.sizes(), gi.strides());
  auto in_layout = [&](const Tensor& t) {  // gi's dtype and strides
    if (!t.defined()) return t;
    return as_strided(contiguous(t.dtype() == x.dtype() ? t : to(t, x.dtype()), fmt), gi.sizes(), gi.strides());
  };
  const ScalarType stat_t = kernels::norm_stat_dtype(x.dtype());
  Tensor gw = mask[1] && weight.defined() ? empty({c}, stat_t) : Tensor();
  Tensor gb = mask[2] && weight.defined() ? empty({c}, stat_t) : Tensor();
  Tensor gr = with_residual ? make_tensor(gi.sizes().vec(), gi.strides().vec(), x.dtype()) : Tensor();
  kernels::batch_norm_backward({.grad_in = gi, .grad_weight = gw, .grad_bias = gb, .grad_out = in_layout(grad_out),
                                .in = in_c, .weight = as_stat(weight, stat_t, c), .mean = as_stat(mean, stat_t, c),
                                .var = as_stat(var, stat_t, c), .training = training, .eps = eps,
                                .relu_out = in_layout(relu_out), .bias = as_stat(bias, stat_t, c),
                                .residual = in_layout(residual), .grad_residual = gr,
                                .relu_out_by = relu_out_by},
                               dispatch("batch_norm_backward"));
  return {mask[0] ? gi : Tensor(), mask[1] ? as_param_grad(gw, weight) : Tensor(), mask[2] ? as_param_grad(gb, given_bias.defined() ? given_bias : weight) : Tensor(),
          mask[3] ? gr : Tensor()};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                                       const Tensor& mean, const Tensor& var, bool training,
                                                       double eps, std::array<bool, 3> mask) {
  BatchNormReluGrads g = backward(grad_out, x, weight, Tensor(), Tensor(), false, mean, var, Tensor(), nullptr, training,
                                  eps, {mask[0], mask[1], mask[2], false});
  return {g.input, g.weight, g.bias};
}

BatchNormReluGrads batch_norm_relu_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                            const Tensor& bias, const Tensor& residual, const BatchNormResult& forward,
                                            bool training, double eps, std::array<bool, 4> mask) {
  const Tensor& out = forward.out;
  STRIDER_CHECK(out.defined() && out.sizes() == x.sizes() && out.dtype() == x.dtype(), "batch_norm_backward",
                "the relu backward needs the forward's output, of the input's shape and dtype ", x.sizes(), " ",
                x.dtype());
  STRIDER_CHECK(forward.relu, "batch_norm_relu_backward",
                "the forward applied no ReLU (relu was false): use batch_norm_backward for it");
  STRIDER_CHECK(forward.relu_mask_from_input == kernels::batch_norm_backward_recomputes_relu_mask(forward.computed_by),
                "batch_norm_relu_backward", "the forward's record is inconsistent (computed by ",
                forward.computed_by ? forward.computed_by : "an unnamed implementation", ", relu_mask_from_input ",
                forward.relu_mask_from_input, "): pass the BatchNormResult batch_norm returned");
  // Where the mask is recomputed, the residual is part of it: the forward's must come back.
  STRIDER_CHECK(!forward.relu_mask_from_input || residual.defined() == forward.residual_added, "batch_norm_backward",
                forward.residual_added ? "the forward added a residual: pass that same residual"
                                       : "the forward added no residual: pass none");
  STRIDER_CHECK(!residual.defined() || (forward.residual_added && residual.sizes() == x.sizes() &&
                                        residual.dtype() == x.dtype()),
                "batch_norm_backward", "the residual must be the forward's, of the input's shape and dtype ", x.sizes(),
                " ", x.dtype(), "; got ", residual.sizes(), " ", residual.dtype(),
                forward.residual_added ? "" : " where the forward added none");
  return backward(grad_out, x, weight, bias, forward.relu_mask_from_input ? residual : Tensor(), forward.residual_added,
                  forward.mean, forward.var, out, forward.computed_by, training, eps, mask);
}

LayerNormResult layer_norm(const Tensor& input, int64_t n, const Tensor& weight, const Tensor& bias, double eps) {
  STRIDER_CHECK(is_floating_point(input.dtype()), "layer_norm", "expected a floating-point input, got ", input.dtype());
  STRIDER_CHECK(n >= 0 && (n == 0 ? input.numel() == 0 : input.numel() % n == 0), "layer_norm", "cannot normalize ",
                input.sizes(), " over ", n, " elements");
  for (const Tensor* p : {&weight, &bias})
    STRIDER_CHECK(!p->defined() || p->numel() == n, "layer_norm", "expected weight and bias of ", n, " elements for input ",
                  input.sizes(), ", got ", p->sizes());
  const ScalarType stat_t = kernels::norm_stat_dtype(input.dtype());
  const int64_t rows = n == 0 ? 0 : input.numel() / n;
  Tensor x = reshape(contiguous(input), {rows, n});
  Tensor out = empty(x.sizes(), input.dtype()), mean = empty({rows}, stat_t), var = empty({rows}, stat_t);
  if (rows > 0)
    kernels::layer_norm_forward({.out = out, .in = x, .weight = as_stat(weight, stat_t, n), .bias = as_stat(bias, stat_t, n),
                                 .mean = mean, .var = var, .eps = eps},
                                dispatch("layer_norm"));
  return {view(out, input.sizes()), mean, var};
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& grad_out, const Tensor& input, int64_t n,
                                                       const Tensor& weight, const Tensor& mean, const Tensor& var,
                                                       double eps, std::array<bool, 3> mask) {
  const ScalarType stat_t = kernels::norm_stat_dtype(input.dtype());
  const int64_t rows = n == 0 ? 0 : input.numel() / n;
  Tensor x = reshape(contiguous(input), {rows, n});
  Tensor go = reshape(contiguous(grad_out.dtype() == input.dtype() ? grad_out : to(grad_out, input.dtype())), {rows, n});
  Tensor gi = empty(x.sizes(), input.dtype());
  Tensor gw = mask[1] && weight.defined() ? empty({n}, stat_t) : Tensor();
  Tensor gb = mask[2] && weight.defined() ? empty({n}, stat_t) : Tensor();
  if (rows > 0) {
    kernels::layer_norm_backward({.grad_in = gi, .grad_weight = gw, .grad_bias = gb, .grad_out = go, .in = x,
                                  .weight = as_stat(weight, stat_t, n), .mean = mean, .var = var, .eps = eps},
                                 dispatch("layer_norm_backward"));
  } else {
    if (gw.defined()) fill_(gw, 0);
    if (gb.defined()) fill_(gb, 0);
  }
  return {mask[0] ? view(gi, input.sizes()) : Tensor(), as_param_grad(gw, weight), as_param_grad(gb, weight)};
}

}  // namespace strider::ops
