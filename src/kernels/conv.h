#pragma once
// Convolution kernels (1-3 spatial dims, groups, stride, padding, dilation; transposed too).
// The ops layer decides every layout; these compute. dnnl:: runs oneDNN primitives (float32 and
// bfloat16), ref:: is a direct loop nest for any floating dtype (the oracle, and float64).
#include "strider/core/tensor.h"

namespace strider::kernels {

struct ConvParams {
  DimVector stride, padding, dilation, output_padding;
  int64_t groups = 1;
  bool transposed = false;
};

namespace dnnl_ops {
// out = conv(in, weight) + bias. For transposed convolution weight is [Cin, Cout/g, k...].
void conv_forward(const Tensor& out, const Tensor& in, const Tensor& weight, const Tensor& bias,
                  const ConvParams& p);
void conv_backward_input(const Tensor& grad_in, const Tensor& grad_out, const Tensor& weight,
                         const ConvParams& p);
// grad_bias may be undefined.
void conv_backward_weight(const Tensor& grad_weight, const Tensor& grad_bias, const Tensor& in,
                          const Tensor& grad_out, const ConvParams& p);
}  // namespace dnnl_ops

namespace ref {
void conv_forward(const Tensor& out, const Tensor& in, const Tensor& weight, const Tensor& bias,
                  const ConvParams& p);
void conv_backward_input(const Tensor& grad_in, const Tensor& grad_out, const Tensor& weight,
                         const ConvParams& p);
void conv_backward_weight(const Tensor& grad_weight, const Tensor& grad_bias, const Tensor& in,
                          const Tensor& grad_out, const ConvParams& p);
}  // namespace ref

}  // namespace strider::kernels
