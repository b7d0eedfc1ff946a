#include "strider/nn/layers.h"

#include <cmath>

#include "strider/autograd/functions.h"
#include "strider/autograd/grad_mode.h"
#include "strider/nn/checkpoint.h"
#include "strider/nn/forward_binding.h"
#include "strider/nn/functional.h"
#include "strider/nn/init.h"
#include "strider/ops/factory.h"

namespace strider::nn {

namespace F = functional;

BatchNorm::BatchNorm(std::string type, int64_t expected_dim, int64_t c, double eps, double momentum, bool affine,
                     bool track)
    : Module(std::move(type)), expected_dim_(expected_dim), num_features_(c), eps_(eps), momentum_(momentum), track_(track) {
  STRIDER_CHECK(c > 0, type_name().c_str(), "num_features must be positive, got ", c);
  if (affine) {
    init::ones_(register_parameter("weight", empty({c})));  // an init call, so deferred init records it
    init::zeros_(register_parameter("bias", empty({c})));
  }
  if (track) {
    register_buffer("running_mean", zeros({c}));
    register_buffer("running_var", ones({c}));
    register_buffer("num_batches_tracked", zeros({}, kLong));
  }
}

Tensor BatchNorm::forward(const Tensor& x) { return normalize(x, Tensor()); }

Value BatchNorm::forward_args(const Args& args) {
  return bind_forward(args, {"input", "residual"}, [this](const Tensor& x, std::optional<Tensor> residual) {
    STRIDER_CHECK(!residual || relu_, type_name().c_str(), "a residual input is added before the fused ReLU: call "
                  "fuse_relu() first, or add it to the output yourself");
    if (!residual) return forward(x);  // a subclass's forward() override still runs for one input
    return normalize(x, *residual);
  });
}

Tensor BatchNorm::normalize(const Tensor& x, const Tensor& residual) {
  const bool ok = x.dim() == expected_dim_ || (expected_dim_ == 2 && x.dim() == 3);
  STRIDER_CHECK(ok, type_name().c_str(), "expected ", expected_dim_, "D input, got shape ", x.sizes());
  STRIDER_CHECK(x.sizes()[1] == num_features_, type_name().c_str(), "expected input with ", num_features_,
                " channels, got ", x.sizes()[1], " (input ", x.sizes(), ")");
  Tensor w = has_param("weight") ? param("weight") : Tensor(), b = has_param("bias") ? param("bias") : Tensor();
  const bool use_batch_stats = is_training() || !track_;
  // A checkpointed block's recomputation in backward normalizes with the batch's statistics
  // again but leaves the running ones alone: they were updated by its forward (PyTorch updates
  // them twice), so checkpointed training keeps the state plain training keeps.
  const bool recomputing = in_recomputation();
  const bool running = track_ && !(use_batch_stats && recomputing);
  Tensor rm = running ? buffer("running_mean") : Tensor(), rv = running ? buffer("running_var") : Tensor();
  Tensor out = residual.defined() ? batch_norm_add_relu(x, residual, rm, rv, w, b, use_batch_stats, momentum_, eps_)
                                  : (relu_ ? batch_norm_relu : batch_norm)(x, rm, rv, w, b, use_batch_stats, momentum_, eps_);
  if (is_training() && track_ && !recomputing) {  // counted once the batch was accepted (a rejected call changes nothing)
    autograd::NoGradGuard g;
    add_(buffer("num_batches_tracked"), Scalar(int64_t{1}));
  }
  return out;
}

LayerNorm::LayerNorm(DimVector shape, double eps, bool affine) : Module("LayerNorm"), shape_(shape), eps_(eps) {
  if (affine) {
    init::ones_(register_parameter("weight", empty(shape)));  // an init call, so deferred init records it
    init::zeros_(register_parameter("bias", empty(shape)));
  }
}
Tensor LayerNorm::forward(const Tensor& x) {
  return F::layer_norm(x, shape_, has_param("weight") ? param("weight") : Tensor(),
                       has_param("bias") ? param("bias") : Tensor(), eps_);
}

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double eps, bool affine)
    : Module("GroupNorm"), groups_(groups), eps_(eps) {
  STRIDER_CHECK(groups > 0 && channels % groups == 0, "GroupNorm", "num_channels ", channels,
                " must be divisible by num_groups ", groups);
  if (affine) {
    init::ones_(register_parameter("weight", empty({channels})));  // an init call, so deferred init records it
    init::zeros_(register_parameter("bias", empty({channels})));
  }
}
Tensor GroupNorm::forward(const Tensor& x) {
  return F::group_norm(x, groups_, has_param("weight") ? param("weight") : Tensor(),
                       has_param("bias") ? param("bias") : Tensor(), eps_);
}

Linear::Linear(int64_t in, int64_t out, bool bias) : Module("Linear") {
  STRIDER_CHECK(in >= 0 && out >= 0, "Linear", "in_features and out_features must not be negative, got ", in, " and ",
                out);
  register_parameter("weight", empty({out, in}));
  if (bias) register_parameter("bias", empty({out}));
  reset_parameters();
}
void Linear::reset_parameters(Generator* gen) {
  init::kaiming_uniform_(param("weight"), std::sqrt(5.0), true, "leaky_relu", gen);
  if (has_param("bias")) {
    const int64_t fan_in = param("weight").sizes()[1];
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;  // PyTorch's
    init::uniform_(param("bias"), -bound, bound, gen);
  }
}
Tensor Linear::forward(const Tensor& x) { return linear(x, param("weight"), has_param("bias") ? param("bias") : Tensor()); }

Embedding::Embedding(int64_t num, int64_t dim) : Module("Embedding") {
  register_parameter("weight", empty({num, dim}));
  init::normal_(param("weight"));
}
Tensor Embedding::forward(const Tensor& idx) { return F::embedding(idx, param("weight")); }

Tensor ReLU::forward(const Tensor& x) { return relu(x); }
Tensor Sigmoid::forward(const Tensor& x) { return sigmoid(x); }
Tensor Tanh::forward(const Tensor& x) { return tanh(x); }
Tensor SiLU::forward(const Tensor& x) { return silu(x); }
Tensor Mish::forward(const Tensor& x) { return mish(x); }
Tensor Hardswish::forward(const Tensor& x) { return hardswish(x); }
Tensor Hardsigmoid::forward(const Tensor& x) { return hardsigmoid(x); }
Tensor SELU::forward(const Tensor& x) { return selu(x); }
Tensor ReLU6::forward(const Tensor& x) { return relu6(x); }
Tensor LeakyReLU::forward(const Tensor& x) { return leaky_relu(x, slope_); }
Tensor ELU::forward(const Tensor& x) { return elu(x, alpha_); }
Softplus::Softplus(double beta, double threshold) : Module("Softplus"), beta_(beta), threshold_(threshold) {
  STRIDER_CHECK(beta != 0 && std::isfinite(beta), "Softplus", "beta must be finite and non-zero, got ", beta);
}
Tensor Softplus::forward(const Tensor& x) { return softplus(x, beta_, threshold_); }
Hardtanh::Hardtanh(double min_val, double max_val) : Module("Hardtanh"), min_(min_val), max_(max_val) {
  STRIDER_CHECK(max_val > min_val, "Hardtanh", "max_val must be greater than min_val, got min_val ", min_val,
                " and max_val ", max_val, " (PyTorch's nn.Hardtanh asserts the same)");
}
Tensor Hardtanh::forward(const Tensor& x) { return hardtanh(x, min_, max_); }
Tensor Softmax::forward(const Tensor& x) { return softmax(x, dim_); }
Tensor LogSoftmax::forward(const Tensor& x) { return log_softmax(x, dim_); }
Tensor GELU::forward(const Tensor& x) { return gelu(x, approximate_); }
Tensor Dropout::forward(const Tensor& x) { return F::dropout(x, p_, is_training()); }
Tensor MaxPool2d::forward(const Tensor& x) { return max_pool2d(x, k_, s_, p_, {1}, ceil_); }
Tensor AvgPool2d::forward(const Tensor& x) { return avg_pool2d(x, k_, s_, p_); }
Tensor AdaptiveAvgPool2d::forward(const Tensor& x) {
  DimVector size = size_.size() == 1 ? DimVector{size_[0], size_[0]} : size_;
  return adaptive_avg_pool2d(x, size);
}

}  // namespace strider::nn
