// The convolution implementation lists: oneDNN computing a plain-layout (NCHW) problem in
// channels-last where its plain-layout kernels are slow, then oneDNN in the problem's own layout, then bfloat16 in float32 where
// oneDNN has no bfloat16 kernels for the CPU, then the reference. On AMX CPUs a bfloat16
// convolution's backward passes go first to oneDNN's matmul where that is faster
// (kernels/conv_as_matmul.h), and a strided one's input gradient to stride-1 forward
// convolutions, one per phase of the input (kernels/conv_phases.h).
#include "kernels/channels_last_detour.h"
#include "kernels/conv.h"
#include "kernels/conv_as_matmul.h"
#include "kernels/conv_phases.h"
#include "kernels/copy.h"
#include "kernels/dnnl/context.h"
#include "kernels/float32_detour.h"

namespace strider::kernels {
namespace {

void forward_in_nhwc(const ConvForward& c) {
  Tensor in = channels_last_copy(c.in), out = channels_last_empty(c.out);
  dnnl_ops::conv_forward(out, in, c.weight, c.bias, c.p);
  cpu::copy(c.out, out);
}

void backward_input_in_nhwc(const ConvBackwardInput& c) {
  Tensor go = channels_last_copy(c.grad_out), gi = channels_last_empty(c.grad_in);
  dnnl_ops::conv_backward_input(gi, go, c.weight, c.p);
  cpu::copy(c.grad_in, gi);
}

void backward_weight_in_nhwc(const ConvBackwardWeight& c) {
  dnnl_ops::conv_backward_weight(c.grad_weight, c.grad_bias, channels_last_copy(c.in),
                                 channels_last_copy(c.grad_out), c.p);
}

// bfloat16 in float32; data in the plain layout goes to channels-last on the way, where oneDNN's
// float32 kernels are fast on every CPU (channels_last_detour.h).
void forward_in_float32(const ConvForward& c) {
  const bool cl = plain_batch_rejects({&c.in, &c.out}).empty();
  Tensor out = float32_empty(c.out, cl);
  dnnl_ops::conv_forward(out, float32_copy(c.in, cl), float32_copy(c.weight), float32_copy(c.bias), c.p);
  round_into(c.out, out);
}

void backward_input_in_float32(const ConvBackwardInput& c) {
  const bool cl = plain_batch_rejects({&c.grad_in, &c.grad_out}).empty();
  Tensor gi = float32_empty(c.grad_in, cl);
  dnnl_ops::conv_backward_input(gi, float32_copy(c.grad_out, cl), float32_copy(c.weight), c.p);
  round_into(c.grad_in, gi);
}

void backward_weight_in_float32(const ConvBackwardWeight& c) {
  const bool cl = plain_batch_rejects({&c.in, &c.grad_out}).empty();
  Tensor gw = float32_empty(c.grad_weight), gb = float32_empty(c.grad_bias);
  dnnl_ops::conv_backward_weight(gw, gb, float32_copy(c.in, cl), float32_copy(c.grad_out, cl), c.p);
  round_into(c.grad_weight, gw);
  round_into(c.grad_bias, gb);
}

}  // namespace

const ImplementationList<ConvForward>& conv_forward_implementations() {
  static const ImplementationList<ConvForward> list = {
      {"onednn_nhwc", [](const ConvForward& c) { return detour_rejects({&c.in, &c.out}); }, forward_in_nhwc},
      {"onednn", [](const ConvForward& c) { return dnnl_ops::rejects_dtype(c.in.dtype()); },
       [](const ConvForward& c) { dnnl_ops::conv_forward(c.out, c.in, c.weight, c.bias, c.p); }},
      {"onednn_f32", [](const ConvForward& c) { return float32_detour_rejects({&c.in, &c.out}); }, forward_in_float32},
      {"ref", [](const ConvForward&) { return std::string(); },
       [](const ConvForward& c) { ref::conv_forward(c.out, c.in, c.weight, c.bias, c.p); }},
  };
  return list;
}

const ImplementationList<ConvBackwardInput>& conv_backward_input_implementations() {
  static const ImplementationList<ConvBackwardInput> list = {
      {"onednn_amx_matmul", amx_matmul_backward_input_rejects, backward_input_as_matmul},
      {"onednn_amx_phases", phase_convolutions_rejects, backward_input_as_phase_convolutions},
      {"onednn_nhwc", [](const ConvBackwardInput& c) { return detour_rejects({&c.grad_in, &c.grad_out}); },
       backward_input_in_nhwc},
      {"onednn", [](const ConvBackwardInput& c) { return dnnl_ops::rejects_dtype(c.grad_out.dtype()); },
       [](const ConvBackwardInput& c) { dnnl_ops::conv_backward_input(c.grad_in, c.grad_out, c.weight, c.p); }},
      {"onednn_f32", [](const ConvBackwardInput& c) { return float32_detour_rejects({&c.grad_in, &c.grad_out}); },
       backward_input_in_float32},
      {"ref", [](const ConvBackwardInput&) { return std::string(); },
       [](const ConvBackwardInput& c) { ref::conv_backward_input(c.grad_in, c.grad_out, c.weight, c.p); }},
  };
  return list;
}

const ImplementationList<ConvBackwardWeight>& conv_backward_weight_implementations() {
  static const ImplementationList<ConvBackwardWeight> list = {
      {"onednn_amx_matmul", amx_matmul_backward_weight_rejects, backward_weight_as_matmul},
      {"onednn_nhwc", [](const ConvBackwardWeight& c) { return detour_rejects({&c.in, &c.grad_out}); },
       backward_weight_in_nhwc},
      {"onednn", [](const ConvBackwardWeight& c) { return dnnl_ops::rejects_dtype(c.in.dtype()); },
       [](const ConvBackwardWeight& c) {
         dnnl_ops::conv_backward_weight(c.grad_weight, c.grad_bias, c.in, c.grad_out, c.p);
       }},
      {"onednn_f32", [](const ConvBackwardWeight& c) { return float32_detour_rejects({&c.in, &c.grad_out}); },
       backward_weight_in_float32},
      {"ref", [](const ConvBackwardWeight&) { return std::string(); },
       [](const ConvBackwardWeight& c) { ref::conv_backward_weight(c.grad_weight, c.grad_bias, c.in, c.grad_out, c.p); }},
  };
  return list;
}

void conv_forward(const ConvForward& problem, const Dispatch& d) {
  run_first("convolution", conv_forward_implementations(), problem, d);
}
void conv_backward_input(const ConvBackwardInput& problem, const Dispatch& d) {
  run_first("convolution_backward_input", conv_backward_input_implementations(), problem, d);
}
void conv_backward_weight(const ConvBackwardWeight& problem, const Dispatch& d) {
  run_first("convolution_backward_weight", conv_backward_weight_implementations(), problem, d);
}

int64_t conv_weight_cache_bytes() { return dnnl_ops::cached_weight_bytes(); }

}  // namespace strider::kernels
