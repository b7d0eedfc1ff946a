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
  // The kernel-list entry that computed out (a static name): a fused ReLU's backward recomputes
  // the ReLU's mask from the input in that same entry only, and reads it from out elsewhere.
  const char* computed_by = nullptr;
  bool relu = false;            // the forward applied the fused ReLU
  bool residual_added = false;  // ... after adding a residual
  // The backward recomputes the ReLU's mask from the input, the statistics, weight, bias and
  // the residual (which it then needs), rather than reading it from out.
  bool relu_mask_from_input = false;
};

// Training updates running_mean/running_var in place (momentum as in PyTorch, unbiased variance
// for the running estimate) when they are defined. weight/bias may be undefined. residual (the
// input's shape and dtype) defined: it is added to the normalized input. relu: out is relu of
// the result. strider's training kernels (float32 and bfloat16, 3-d to 5-d, training mode) fuse
// both into the normalizing pass; elsewhere the add and the ReLU run after it. The values are
// those of the separate ops either way (ResNet's relu(bn(x) + identity)).
BatchNormResult batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                           const Tensor& running_mean, const Tensor& running_var, bool training,
                           double momentum, double eps, bool relu = false, const Tensor& residual = Tensor());

std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(const Tensor& grad_out, const Tensor& input,
                                                       const Tensor& weight, const Tensor& mean,
                                                       const Tensor& var, bool training, double eps,
                                                       std::array<bool, 3> mask);

struct BatchNormReluGrads {
  Tensor input, weight, bias, residual;
};
// The backward of batch_norm with relu set: `forward` is that call's result, input, weight and
// bias (each may be undefined) its arguments; grad_out is the gradient of forward.out. residual:
// the forward's, needed only where forward.relu_mask_from_input (undefined otherwise is fine).
// A residual's gradient comes where the forward added one. mask: input, weight, bias, residual.
BatchNormReluGrads batch_norm_relu_backward(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                                            const Tensor& bias, const Tensor& residual, const BatchNormResult& forward,
                                            bool training, double eps, std::array<bool, 4> mask);

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
// The layout batch_norm's backward gives the input's gradient, for this input and output gradient.
MemoryFormat batch_norm_backward_memory_format(const Tensor& input, const Tensor& grad_out);

}  // namespace strider::ops
