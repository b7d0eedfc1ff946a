#pragma once
// Normalization without autograd. Batch norm's output layout follows SPEC §11: contiguous when
// the input is contiguous, channels-last when it is channels-last contiguous, otherwise the
// input's suggested format. Layer norm is contiguous (§9).
#include <array>
#include <tuple>

#include "strider/core/tensor.h"

namespace strider::ops {

struct BatchNormResult {
  Tensor out;
  // [C], float32 (float64 for float64 input):
  Tensor mean;  // batch mean (training) or the running mean used (eval)
  Tensor var;   // biased batch variance (training) or the running variance (eval)
};

// Training updates running_mean/running_var in place (momentum as in PyTorch, unbiased variance
// for the running estimate) when they are defined. weight/bias may be undefined. relu: out is
// relu of the normalized input, in one pass where the kernels fuse it.
BatchNormResult batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                           const Tensor& running_mean, const Tensor& running_var, bool training,
                           double momentum, double eps, bool relu = false);

// After a batch_norm with relu, relu_out is its output and bias its bias (grad_out is the
// ReLU's output gradient); otherwise both are undefined.
std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(const Tensor& grad_out, const Tensor& input,
                                                       const Tensor& weight, const Tensor& mean,
                                                       const Tensor& var, bool training, double eps,
                                                       std::array<bool, 3> mask, const Tensor& relu_out = Tensor(),
                                                       const Tensor& bias = Tensor());

struct LayerNormResult {
  Tensor out;   // contiguous, input's shape and dtype
  Tensor mean;  // [rows], float32 (float64 for float64 input)
  Tensor var;   // [rows], biased, the same dtype
};
// Normalizes over the trailing dims whose product is `n` (kernels/norm.h picks the implementation).
// weight/bias ([n] after flattening) may be undefined.
LayerNormResult layer_norm(const Tensor& input, int64_t n, const Tensor& weight, const Tensor& bias, double eps);
std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& grad_out, const Tensor& input, int64_t n,
                                                       const Tensor& weight, const Tensor& mean, const Tensor& var,
                                                       double eps, std::array<bool, 3> mask);

// The layout batch_norm gives its output for this input.
MemoryFormat batch_norm_memory_format(const Tensor& input, bool params_contiguous);

}  // namespace strider::ops
