#include "strider/nn/init.h"

#include <cmath>
#include <string>

#include "init_math.h"
#include "strider/autograd/functions.h"
#include "strider/autograd/grad_mode.h"
#include "strider/nn/deferred_init.h"
#include "strider/ops/factory.h"

namespace strider::nn::init {


std::pair<int64_t, int64_t> fans(const Tensor& t) {
  STRIDER_CHECK(t.dim() >= 2, "init", "fan in/out need a tensor of at least 2 dimensions, got ", t.sizes());
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.sizes()[d];
  return {t.sizes()[1] * receptive, t.sizes()[0] * receptive};
}

namespace {
// PyTorch's checks: its random fills refuse integer tensors for these distributions.
void check_floating(const Tensor& t, const char* op) {
  STRIDER_CHECK(t.defined() && is_floating_point(t.dtype()), op, "needs a floating-point tensor, got ",
                t.defined() ? std::string(to_string(t.dtype())) : std::string("an undefined one"),
                "; initialize a float tensor and convert it");
}
}  // namespace

void uniform_(const Tensor& t, double lo, double hi, Generator* gen) {
  check_floating(t, "init::uniform_");
  STRIDER_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo <= hi, "init::uniform_", "expects a <= b, both finite, got a=",
                lo, ", b=", hi, " (PyTorch: 'uniform_ expects to return a [from, to) range')");
  if (nn::deferred::record_init(t, {.kind = nn::deferred::InitRecipe::Kind::Uniform, .a = lo, .b = hi})) return;
  autograd::NoGradGuard g;
  t.copy_(rand(t.sizes(), kDouble, gen) * (hi - lo) + lo);
}

void normal_(const Tensor& t, double mean, double std, Generator* gen) {
  check_floating(t, "init::normal_");
  STRIDER_CHECK(std::isfinite(mean) && std >= 0 && std::isfinite(std), "init::normal_",
                "expects a finite mean and std >= 0, got mean=", mean, ", std=", std);
  if (nn::deferred::record_init(t, {.kind = nn::deferred::InitRecipe::Kind::Normal, .a = mean, .b = std})) return;
  autograd::NoGradGuard g;
  t.copy_(randn(t.sizes(), kDouble, gen) * std + mean);
}

void trunc_normal_(const Tensor& t, double mean, double std, double a, double b, Generator* gen) {
  check_floating(t, "init::trunc_normal_");
  STRIDER_CHECK(std::isfinite(mean) && std::isfinite(std) && std >= 0 && !std::isnan(a) && !std::isnan(b) && a <= b,
                "init::trunc_normal_", "expects a finite mean, std >= 0 and bounds a <= b, got mean=", mean, ", std=",
                std, ", a=", a, ", b=", b);
  if (nn::deferred::record_init(t, {.kind = nn::deferred::InitRecipe::Kind::TruncNormal, .a = mean, .b = std, .lo = a,
                                    .hi = b}))
    return;
  autograd::NoGradGuard g;
  Tensor u = rand(t.sizes(), kDouble, gen);
  const detail::TruncNormal dist{mean, std, a, b};
  double* p = static_cast<double*>(u.data());
  for (int64_t i = 0; i < u.numel(); ++i) p[i] = dist.from_uniform(p[i]);
  t.copy_(u);
}

void orthogonal_(const Tensor& t, double gain, Generator* gen) {
  check_floating(t, "init::orthogonal_");
  STRIDER_CHECK(t.dim() >= 2, "init::orthogonal_", "needs a tensor of 2 or more dimensions, got ", t.sizes(),
                " (PyTorch: 'Only tensors with 2 or more dimensions are supported')");
  STRIDER_CHECK(std::isfinite(gain), "init::orthogonal_", "expects a finite gain, got ", gain);
  if (t.numel() == 0) return;  // PyTorch: "Initializing zero-element tensors is a no-op"
  if (nn::deferred::record_init(t, {.kind = nn::deferred::InitRecipe::Kind::Orthogonal, .a = gain})) return;
  autograd::NoGradGuard g;
  const int64_t rows = t.size(0), cols = t.numel() / rows;
  Tensor drawn = randn({rows * cols}, kDouble, gen);
  const double* p = static_cast<const double*>(drawn.data());
  std::vector<double> q = detail::orthogonal_from_normal({p, p + rows * cols}, rows, cols, gain);
  t.copy_(from_blob(q.data(), t.sizes(), kDouble));
}

void constant_(const Tensor& t, double value) {
  if (nn::deferred::record_init(t, {.kind = nn::deferred::InitRecipe::Kind::Constant, .a = value})) return;
  autograd::NoGradGuard g;
  t.fill_(value);
}
void zeros_(const Tensor& t) { constant_(t, 0.0); }
void ones_(const Tensor& t) { constant_(t, 1.0); }

double calculate_gain(const std::string& nl, std::optional<double> param) {
  if (nl == "linear" || nl == "sigmoid" || nl.rfind("conv", 0) == 0) return 1.0;
  if (nl == "tanh") return 5.0 / 3.0;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") {
    const double slope = param.value_or(0.01);  // PyTorch's default negative slope
    return std::sqrt(2.0 / (1.0 + slope * slope));
  }
  if (nl == "selu") return 3.0 / 4.0;
  STRIDER_CHECK(false, "calculate_gain", "unsupported nonlinearity '", nl,
                "'; use linear, conv1d/2d/3d, sigmoid, tanh, relu, leaky_relu or selu");
  return 1.0;
}

void kaiming_uniform_(const Tensor& t, double a, bool fan_in, const std::string& nl, Generator* gen) {
  auto [fi, fo] = fans(t);
  if (t.numel() == 0) return;  // PyTorch: "Initializing zero-element tensors is a no-op"
  const double bound = std::sqrt(3.0) * calculate_gain(nl, a) / std::sqrt(static_cast<double>(fan_in ? fi : fo));
  uniform_(t, -bound, bound, gen);
}

void kaiming_normal_(const Tensor& t, double a, bool fan_in, const std::string& nl, Generator* gen) {
  auto [fi, fo] = fans(t);
  if (t.numel() == 0) return;  // PyTorch: "Initializing zero-element tensors is a no-op"
  normal_(t, 0.0, calculate_gain(nl, a) / std::sqrt(static_cast<double>(fan_in ? fi : fo)), gen);
}

void xavier_uniform_(const Tensor& t, double gain, Generator* gen) {
  auto [fi, fo] = fans(t);
  if (t.numel() == 0) return;  // nothing to fill (and fan_in + fan_out may be 0)
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fi + fo));
  uniform_(t, -bound, bound, gen);
}

void xavier_normal_(const Tensor& t, double gain, Generator* gen) {
  auto [fi, fo] = fans(t);
  if (t.numel() == 0) return;  // nothing to fill (and fan_in + fan_out may be 0)
  normal_(t, 0.0, gain * std::sqrt(2.0 / static_cast<double>(fi + fo)), gen);
}

}  // namespace strider::nn::init
