// The convolution implementation lists: oneDNN computing a plain-layout (NCHW) problem in
// channels-last where its plain-layout kernels are slow, then oneDNN in the problem's own layout, then bfloat16 in float32 where
// oneDNN has no bfloat16 kernels for the CPU, then the reference. The backward passes of a 1x1
// bfloat16 convolution on AMX go first to oneDNN's matmul (amx_1x1_rejects says why).
#include "core/make_tensor.h"
#include "kernels/channels_last_detour.h"
#include "kernels/conv.h"
#include "kernels/copy.h"
#include "kernels/cpu_isa.h"
#include "kernels/dnnl/context.h"
#include "kernels/float32_detour.h"
#include "kernels/matmul.h"

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

// oneDNN 2.6's only AMX kernels for a convolution's backward passes are its older jit ones, which
// ran ResNet-50's 1x1 products 2-6x slower than its brgemm AMX matmul runs the same products
// (docs/benchmarks.md; without AMX the two run at the same speed, so elsewhere these decline).
// A 1x1, unpadded, ungrouped 2-d convolution with stride s reads the pixels in[:, :, ::s, ::s];
// over those pixels, channels-last, it is a matrix product:
// grad_in[NHW, Cin] = grad_out[NHW, Cout] weight[Cout, Cin] (the other pixels' gradient is zero),
// and grad_weight[Cout, Cin] = grad_out[NHW, Cout]^T in[NHW, Cin].
std::string amx_1x1_rejects(std::initializer_list<const Tensor*> data, const Tensor& weight, const ConvParams& p) {
  if (!cpu_has(Isa::amx_bf16)) return "needs AMX (amx_bf16), which this CPU (or STRIDER_MAX_CPU_ISA) lacks";
  if (weight.dtype() != kBFloat16) return "not bfloat16";
  for (const Tensor* t : data)
    if (t->dtype() != kBFloat16) return "not bfloat16";
  if (p.transposed || p.groups != 1 || weight.dim() != 4) return "not an ungrouped 2-d convolution";
  if (weight.sizes()[2] != 1 || weight.sizes()[3] != 1) return "not a 1x1 kernel";
  for (size_t d = 0; d < 2; ++d)
    if (p.padding[d] != 0) return "padded";
  for (const Tensor* t : data)
    if (!t->is_contiguous() && !t->is_contiguous(MemoryFormat::ChannelsLast)) return "data not dense";
  return "";
}

// A channels-last batch's pixels as the rows of an [NHW, C] matrix (`transposed`: [C, NHW]).
Tensor pixel_rows(const Tensor& nhwc, bool transposed = false) {
  const int64_t c = nhwc.sizes()[1], pixels = nhwc.numel() / c;
  if (transposed) return alias_with(nhwc, {c, pixels}, {1, c}, nhwc.storage_offset());
  return alias_with(nhwc, {pixels, c}, {c, 1}, nhwc.storage_offset());
}

// A 1x1 weight [Cout, Cin, 1, 1] (either layout) as its [Cout, Cin] matrix.
Tensor weight_matrix(const Tensor& w) {
  return alias_with(w, {w.sizes()[0], w.sizes()[1]}, {w.strides()[0], w.strides()[1]}, w.storage_offset());
}

bool strided(const ConvParams& p) { return p.stride[0] != 1 || p.stride[1] != 1; }

// The pixels of `t` a 1x1 convolution with p's stride reads, [N, C, OH, OW] (OH, OW from
// grad_out), as a view: t itself without a stride.
Tensor pixels_read(const Tensor& t, const ConvParams& p, const Tensor& grad_out) {
  if (!strided(p)) return t;
  const auto st = t.strides();
  return alias_with(t, {t.sizes()[0], t.sizes()[1], grad_out.sizes()[2], grad_out.sizes()[3]},
                    {st[0], st[1], st[2] * p.stride[0], st[3] * p.stride[1]}, t.storage_offset());
}

// is_contiguous(ChannelsLast) skips dims of size 1, whose strides the views below never use.
Tensor nhwc_view_or_copy(const Tensor& t) {
  return t.is_contiguous(MemoryFormat::ChannelsLast) ? t : channels_last_copy(t);
}

void backward_input_1x1_as_matmul(const ConvBackwardInput& c) {
  const Tensor gi = c.grad_in.is_contiguous(MemoryFormat::ChannelsLast) ? c.grad_in : channels_last_empty(c.grad_in);
  const Tensor read = pixels_read(gi, c.p, c.grad_out);
  const Tensor rows = strided(c.p) ? channels_last_empty(read) : gi;
  dnnl_ops::matmul({pixel_rows(rows), pixel_rows(nhwc_view_or_copy(c.grad_out)), weight_matrix(c.weight), Tensor()});
  if (strided(c.p)) {
    cpu::fill(gi, 0);
    cpu::copy(read, rows);
  }
  if (!gi.is_same(c.grad_in)) cpu::copy(c.grad_in, gi);
}

void backward_weight_1x1_as_matmul(const ConvBackwardWeight& c) {
  dnnl_ops::matmul({weight_matrix(c.grad_weight), pixel_rows(nhwc_view_or_copy(c.grad_out), true),
                    pixel_rows(nhwc_view_or_copy(pixels_read(c.in, c.p, c.grad_out))), Tensor()});
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
      {"onednn_amx_1x1_matmul",
       [](const ConvBackwardInput& c) { return amx_1x1_rejects({&c.grad_in, &c.grad_out}, c.weight, c.p); },
       backward_input_1x1_as_matmul},
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
      {"onednn_amx_1x1_matmul",
       [](const ConvBackwardWeight& c) -> std::string {
         if (c.grad_bias.defined()) return "computes a bias gradient";
         return amx_1x1_rejects({&c.in, &c.grad_out}, c.grad_weight, c.p);
       },
       backward_weight_1x1_as_matmul},
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
