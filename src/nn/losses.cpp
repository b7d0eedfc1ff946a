// Elementwise losses. mse, l1, smooth_l1, huber and kl_div compose differentiable ops (PyTorch's
// formulas, so the same values and gradients; `where` selects a branch, so the branch not taken
// gets 0 even from an infinite gradient). The two binary cross entropies have PyTorch's own
// backward formulas, one pass each: composing their forward would differentiate the log clamp and
// the max(-x, 0) shift instead.
#include <array>
#include <cmath>

#include "nn/loss_utils.h"
#include "strider/autograd/grad_mode.h"
#include "strider/autograd/record.h"
#include "strider/core/dispatch.h"
#include "strider/ops/factory.h"

namespace strider::nn::functional {
namespace detail {

void check_reduction(const char* op, Reduction reduction) {
  STRIDER_CHECK(reduction == Reduction::Mean || reduction == Reduction::Sum || reduction == Reduction::None, op,
                reduction == Reduction::BatchMean ? "reduction BatchMean is only for kl_div (PyTorch: 'batchmean is "
                                                    "not a valid value for reduction'); use Mean, Sum or None"
                                                  : "invalid reduction; use Mean, Sum or None");
}

Tensor apply_reduction(const Tensor& loss, Reduction reduction) {
  if (reduction == Reduction::Mean) return mean(loss);
  if (reduction == Reduction::Sum) return sum(loss);
  return loss;
}

void check_weight(const char* op, const char* name, const Tensor& weight, const Tensor& input) {
  STRIDER_CHECK(weight.dtype() == input.dtype(), op, name, " must have the input's dtype ", input.dtype(), ", got ",
                weight.dtype(), "; convert it with .to(", input.dtype(), ")");
  STRIDER_CHECK(!autograd::any_requires_grad({&weight}), op, name, " requires grad, but the loss is not "
                "differentiable with respect to it (PyTorch refuses it too); pass ", name, ".detach()");
  if (weight.numel() == 0) return;
  autograd::NoGradGuard no_grad;
  const double lowest = min(weight).item<double>();
  STRIDER_CHECK(lowest >= 0, op, name, " ", weight.sizes(), " must be >= 0 everywhere, got ", lowest,
                " (a negative or NaN weight turns the loss into a gain and the weighted mean meaningless)");
}

}  // namespace detail

namespace {

using detail::apply_reduction;
using detail::check_reduction;

void check_pair(const char* op, const Tensor& input, const Tensor& target) {
  STRIDER_CHECK(is_floating_point(input.dtype()), op, "expected a floating-point input, got ", input.dtype());
  STRIDER_CHECK(input.sizes() == target.sizes(), op, "input ", input.sizes(), " and target ", target.sizes(),
                " must have the same shape (PyTorch would broadcast them, almost always a bug); reshape the target "
                "to ", input.sizes());
}

}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_reduction("mse_loss", reduction);
  check_pair("mse_loss", input, target);
  Tensor d = input - target;
  return apply_reduction(d * d, reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_reduction("l1_loss", reduction);
  check_pair("l1_loss", input, target);
  return apply_reduction(abs(input - target), reduction);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta) {
  check_reduction("smooth_l1_loss", reduction);
  check_pair("smooth_l1_loss", input, target);
  STRIDER_CHECK(beta >= 0, "smooth_l1_loss", "beta must be >= 0 (PyTorch: smooth_l1_loss does not support "
                "negative values for beta), got ", beta);
  Tensor d = input - target;
  // PyTorch's kernel with beta 0: |d|, whose gradient is -1 for d <= 0 (so -1 at d == 0, where
  // l1_loss's is 0).
  if (beta == 0) return apply_reduction(where(le(d, 0.0), rsub(d, 0.0), d), reduction);
  Tensor z = abs(d);
  return apply_reduction(where(lt(z, beta), d * d * 0.5 / beta, z - 0.5 * beta), reduction);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta) {
  check_reduction("huber_loss", reduction);
  check_pair("huber_loss", input, target);
  STRIDER_CHECK(delta > 0, "huber_loss", "delta must be > 0 (PyTorch: huber_loss does not support non-positive "
                "values for delta), got ", delta);
  Tensor d = input - target;
  Tensor z = abs(d);
  return apply_reduction(where(lt(z, delta), d * d * 0.5, (z - 0.5 * delta) * delta), reduction);
}

Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction, bool log_target) {
  check_pair("kl_div", input, target);
  STRIDER_CHECK(is_floating_point(target.dtype()), "kl_div", "expected a floating-point target, got ", target.dtype());
  // PyTorch 1.13: exp(t) (t - x), or xlogy(t, t) - t x, whose target gradient at t == 0 is 0 / 0.
  Tensor loss = log_target ? exp(target) * (target - input)
                           : where(eq(target, 0.0), Scalar(0.0), target * log(target)) - target * input;
  if (reduction == Reduction::BatchMean) {
    Tensor total = sum(loss);
    return input.dim() == 0 ? total : total / static_cast<double>(input.sizes()[0]);
  }
  check_reduction("kl_div", reduction);
  return apply_reduction(loss, reduction);
}

namespace {

// One pass over dense operands of one shape and dtype: out[i] = f(v) with v = {x, t, w, pw, g}
// at i in the op-math type (float for 16-bit dtypes); an absent operand reads 1.
template <class F>
Tensor map_elements(const char* op, const std::array<Tensor, 5>& operands, F f) {
  const Tensor& first = operands[0];
  Tensor out = empty(first.sizes(), first.dtype());
  const int64_t n = first.numel();
  dispatch_floating(first.dtype(), op, [&]<class T>() {
    using M = opmath_t<T>;
    std::array<const T*, 5> p{};
    for (size_t k = 0; k < operands.size(); ++k)
      p[k] = operands[k].defined() ? static_cast<const T*>(operands[k].data()) : nullptr;
    T* o = out.data_ptr<T>();
    std::array<M, 5> v{};
    for (int64_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < p.size(); ++k) v[k] = p[k] ? static_cast<M>(p[k][i]) : M(1);
      o[i] = static_cast<T>(f(v, i));
    }
  });
  return out;
}

// binary_cross_entropy(_with_logits)'s shared path: checks, dense operands, forward, backward.
template <class Fwd, class GradInput, class GradTarget>
Tensor binary_loss(const char* op, const Tensor& input, const Tensor& target, const Tensor& weight,
                   const Tensor& pos_weight, Reduction reduction, Fwd fwd, GradInput grad_input,
                   GradTarget grad_target) {
  check_reduction(op, reduction);
  check_pair(op, input, target);
  STRIDER_CHECK(target.dtype() == input.dtype(), op, "target must have the input's dtype ", input.dtype(), ", got ",
                target.dtype(), "; convert it with .to(", input.dtype(), ")");
  std::array<Tensor, 5> dense = {input.contiguous(), target.contiguous(), Tensor(), Tensor(), Tensor()};
  const std::array<const Tensor*, 2> extra = {&weight, &pos_weight};
  const std::array<const char*, 2> names = {"weight", "pos_weight"};
  for (size_t k = 0; k < 2; ++k) {
    const Tensor& w = *extra[k];
    if (!w.defined()) continue;
    detail::check_weight(op, names[k], w, input);
    bool fits = w.dim() <= input.dim();
    for (int64_t d = 1; fits && d <= w.dim(); ++d)
      fits = w.sizes()[w.dim() - d] == 1 || w.sizes()[w.dim() - d] == input.sizes()[input.dim() - d];
    STRIDER_CHECK(fits, op, names[k], " ", w.sizes(), " does not broadcast to the input's shape ", input.sizes());
    autograd::NoGradGuard no_grad;
    dense[2 + k] = w.expand(input.sizes()).contiguous();
  }
  Tensor loss;
  {
    autograd::NoGradGuard no_grad;
    loss = map_elements(op, dense, fwd);
  }
  if (autograd::any_requires_grad({&input, &target})) {
    std::array<autograd::SavedTensor, 4> saved;
    std::array<bool, 4> present{};
    for (size_t k = 0; k < 4; ++k)
      if ((present[k] = dense[k].defined())) saved[k] = autograd::SavedTensor(dense[k]);
    loss = autograd::record(op, {&input, &target}, loss,
                            [=](const std::vector<Tensor>& g, const autograd::Node& node) -> std::vector<Tensor> {
      std::array<Tensor, 5> v;
      for (size_t k = 0; k < 4; ++k)
        if (present[k]) v[k] = saved[k].unpack(op);
      v[4] = g[0].to(v[0].dtype()).contiguous();
      return {node.needs_input_grad(0) ? map_elements(op, v, grad_input) : Tensor(),
              node.needs_input_grad(1) ? map_elements(op, v, grad_target) : Tensor()};
    });
  }
  return apply_reduction(loss, reduction);
}

// Both BCEs refuse targets outside [0, 1] (a 0/255 mask is the usual cause); PyTorch takes them.
template <class M>
void check_probability(const char* op, const char* what, M value, int64_t i) {
  STRIDER_CHECK(value >= M(0) && value <= M(1), op, "all elements of ", what, " should be between 0 and 1, got ",
                static_cast<double>(value), " at flat index ", i,
                std::string(what) == "target" ? " (scale a 0/255 mask to 0/1 first)" : "");
}

}  // namespace

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction reduction) {
  const char* op = "binary_cross_entropy";
  // PyTorch 1.13: (t - 1) max(log(1 - x), -100) - t max(log x, -100), times the weight.
  auto fwd = [op](const auto& v, int64_t i) {
    using M = std::decay_t<decltype(v[0])>;
    const M x = v[0], t = v[1];
    check_probability(op, "input", x, i);
    check_probability(op, "target", t, i);
    return ((t - M(1)) * std::max(M(std::log(M(1) - x)), M(-100)) - t * std::max(M(std::log(x)), M(-100))) * v[2];
  };
  // d/dx: g (x - t) / max((1 - x) x, eps) w, eps PyTorch's float 1e-12 (9.9999999600e-13 in
  // float64); d/dt: -logit(x) g w.
  auto grad_input = [](const auto& v, int64_t) {
    using M = std::decay_t<decltype(v[0])>;
    const M x = v[0];
    return v[4] * (x - v[1]) / std::max((M(1) - x) * x, static_cast<M>(1e-12f)) * v[2];
  };
  auto grad_target = [](const auto& v, int64_t) {
    using M = std::decay_t<decltype(v[0])>;
    return -M(std::log(v[0] / (M(1) - v[0]))) * v[4] * v[2];
  };
  return binary_loss(op, input, target, weight, Tensor(), reduction, fwd, grad_input, grad_target);
}

namespace {
template <class M>
M log_sigmoid(M x) {  // PyTorch's: min(x, 0) - log1p(exp(-|x|))
  return std::min(x, M(0)) - M(std::log1p(std::exp(-std::abs(x))));
}
}  // namespace

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        Reduction reduction, const Tensor& pos_weight) {
  const char* op = "binary_cross_entropy_with_logits";
  const bool has_pw = pos_weight.defined();
  // PyTorch 1.13, m = max(-x, 0): (1 - t) x + lw (log(exp(-m) + exp(-x - m)) + m), lw = (pw - 1) t + 1
  // (lw = 1 and the terms in another order without pos_weight), times the weight.
  auto fwd = [op, has_pw](const auto& v, int64_t i) {
    using M = std::decay_t<decltype(v[0])>;
    const M x = v[0], t = v[1], m = std::max(-x, M(0));
    check_probability(op, "target", t, i);
    const M lse = M(std::log(M(std::exp(-m)) + M(std::exp(-x - m))));
    const M loss = has_pw ? (M(1) - t) * x + ((v[3] - M(1)) * t + M(1)) * (lse + m) : (M(1) - t) * x + m + lse;
    return loss * v[2];
  };
  // d/dx: ((pw t + 1 - t) sigmoid(x) - pw t) g w, or (sigmoid(x) - t) g w.
  auto grad_input = [has_pw](const auto& v, int64_t) {
    using M = std::decay_t<decltype(v[0])>;
    const M s = M(1) / (M(1) + M(std::exp(-v[0]))), t = v[1], pt = v[3] * t;
    return (has_pw ? (pt + M(1) - t) * s - pt : s - t) * v[4] * v[2];
  };
  // d/dt: (log_sigmoid(-x) - pw log_sigmoid(x)) g w, or -x g w.
  auto grad_target = [has_pw](const auto& v, int64_t) {
    using M = std::decay_t<decltype(v[0])>;
    const M x = v[0];
    return (has_pw ? log_sigmoid(-x) - log_sigmoid(x) * v[3] : -x) * v[4] * v[2];
  };
  return binary_loss(op, input, target, weight, pos_weight, reduction, fwd, grad_input, grad_target);
}

}  // namespace strider::nn::functional
