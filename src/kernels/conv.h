#pragma once
// Convolution kernels (1-3 spatial dims, groups, stride, padding, dilation; transposed too).
// The ops layer decides every layout; these compute. Each of the three computations has an
// ordered implementation list (kernels/conv_list.cpp): oneDNN on channels-last copies for
// plain-layout bfloat16 ("onednn_nhwc", kernels/channels_last_detour.h), oneDNN in place
// (float32, and bfloat16 from AVX-512 up), bfloat16 in float32 below it ("onednn_f32",
// kernels/float32_detour.h), then the reference, a direct loop nest for any floating dtype (the
// oracle, and float64). On AMX CPUs a bfloat16 convolution's backward passes go first to
// oneDNN's matmul where that is faster ("onednn_amx_matmul", kernels/conv_as_matmul.h), and a
// strided one's input gradient to stride-1 forward convolutions ("onednn_amx_phases",
// kernels/conv_phases.h).
#include "kernels/implementation_list.h"
#include "strider/core/tensor.h"

namespace strider::kernels {

struct ConvParams {
  DimVector stride, padding, dilation, output_padding;
  int64_t groups = 1;
  bool transposed = false;
};

// out = conv(in, weight) + bias (bias may be undefined).
struct ConvForward {
  Tensor out, in, weight, bias;
  ConvParams p;
};
// grad_in = d conv / d in applied to grad_out.
struct ConvBackwardInput {
  Tensor grad_in, grad_out, weight;
  ConvParams p;
};
// grad_weight (and grad_bias, when defined) from in and grad_out.
struct ConvBackwardWeight {
  Tensor grad_weight, grad_bias, in, grad_out;
  ConvParams p;
};

const ImplementationList<ConvForward>& conv_forward_implementations();
const ImplementationList<ConvBackwardInput>& conv_backward_input_implementations();
const ImplementationList<ConvBackwardWeight>& conv_backward_weight_implementations();

void conv_forward(const ConvForward& problem, const Dispatch& d);
void conv_backward_input(const ConvBackwardInput& problem, const Dispatch& d);
void conv_backward_weight(const ConvBackwardWeight& problem, const Dispatch& d);

// Bytes of weights oneDNN keeps reordered (ops::conv_weight_cache_bytes).
int64_t conv_weight_cache_bytes();

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
