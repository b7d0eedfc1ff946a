// Convolution backward passes as oneDNN matmuls on AMX CPUs (conv_as_matmul.h says why and how).
#include "kernels/conv_as_matmul.h"

#include <algorithm>

#include "core/make_tensor.h"
#include "kernels/channels_last_detour.h"
#include "kernels/copy.h"
#include "kernels/cpu_isa.h"
#include "kernels/matmul.h"

namespace strider::kernels {
namespace {

std::string amx_rejects(std::initializer_list<const Tensor*> data, const Tensor& weight, const ConvParams& p) {
  if (!cpu_has(Isa::amx_bf16)) return "needs AMX (amx_bf16), which this CPU (or STRIDER_MAX_CPU_ISA) lacks";
  if (weight.dtype() != kBFloat16) return "not bfloat16";
  for (const Tensor* t : data)
    if (t->dtype() != kBFloat16) return "not bfloat16";
  if (p.transposed || p.groups != 1 || weight.dim() != 4) return "not an ungrouped 2-d convolution";
  for (const Tensor* t : data)
    if (!t->is_contiguous() && !t->is_contiguous(MemoryFormat::ChannelsLast)) return "data not dense";
  return "";
}

bool one_by_one_unpadded(const Tensor& weight, const ConvParams& p) {
  return weight.sizes()[2] == 1 && weight.sizes()[3] == 1 && p.padding[0] == 0 && p.padding[1] == 0;
}

bool strided(const ConvParams& p) { return p.stride[0] != 1 || p.stride[1] != 1; }

// A channels-last batch's pixels as the rows of an [NHW, C] matrix (`transposed`: [C, NHW]).
Tensor pixel_rows(const Tensor& nhwc, bool transposed = false) {
  const int64_t c = nhwc.sizes()[1], pixels = nhwc.numel() / c;
  if (transposed) return alias_with(nhwc, {c, pixels}, {1, c}, nhwc.storage_offset());
  return alias_with(nhwc, {pixels, c}, {c, 1}, nhwc.storage_offset());
}

// A weight [Cout, Cin, KH, KW] as its [Cout, KH*KW*Cin] matrix: a 1x1 weight in any layout (its
// columns are the channels, at their stride), a larger one dense channels-last (its columns are
// contiguous; with one input channel its channel stride may be anything, so it is not used).
Tensor weight_matrix(const Tensor& w) {
  const int64_t cout = w.sizes()[0], k = w.numel() / std::max<int64_t>(1, cout);
  const bool one_by_one = w.sizes()[2] == 1 && w.sizes()[3] == 1;
  return alias_with(w, {cout, k}, {w.strides()[0], one_by_one ? w.strides()[1] : 1}, w.storage_offset());
}

// is_contiguous(ChannelsLast) skips dims of size 1, whose strides the pixel views never use.
Tensor nhwc_view_or_copy(const Tensor& t) {
  return t.is_contiguous(MemoryFormat::ChannelsLast) ? t : channels_last_copy(t);
}

// The pixels of `t` an unpadded 1x1 convolution with p's stride reads, [N, C, OH, OW] (OH, OW
// from grad_out), as a view: t itself without a stride.
Tensor pixels_read(const Tensor& t, const ConvParams& p, const Tensor& grad_out) {
  if (!strided(p)) return t;
  const auto st = t.strides();
  return alias_with(t, {t.sizes()[0], t.sizes()[1], grad_out.sizes()[2], grad_out.sizes()[3]},
                    {st[0], st[1], st[2] * p.stride[0], st[3] * p.stride[1]}, t.storage_offset());
}

// The outputs o in [lo, hi) whose input index o * stride - pad + offset lies in [0, size).
std::pair<int64_t, int64_t> valid_outputs(int64_t out, int64_t size, int64_t stride, int64_t pad, int64_t offset) {
  const int64_t first = pad - offset;  // the smallest o * stride that lands at or after 0
  const int64_t lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  const int64_t last = size - 1 + pad - offset;  // the largest o * stride that lands before size
  const int64_t hi = last < 0 ? 0 : std::min(out, last / stride + 1);
  return {std::min(lo, hi), hi};
}

// The im2col matrix of `in` for this convolution, [N*OH*OW, KH*KW*Cin]: a view of the
// channels-last pixels for an unpadded 1x1 kernel with stride 1, else a copy, one strided copy
// per kernel tap (into a zeroed matrix where padding leaves entries no tap writes).
Tensor input_columns(const Tensor& in, const Tensor& weight, const Tensor& grad_out, const ConvParams& p) {
  if (one_by_one_unpadded(weight, p)) return pixel_rows(nhwc_view_or_copy(pixels_read(in, p, grad_out)));
  const int64_t N = in.sizes()[0], C = in.sizes()[1], H = in.sizes()[2], W = in.sizes()[3];
  const int64_t KH = weight.sizes()[2], KW = weight.sizes()[3], OH = grad_out.sizes()[2], OW = grad_out.sizes()[3];
  Tensor cols = make_tensor({N * OH * OW, KH * KW * C}, {KH * KW * C, 1}, in.dtype());
  // Without padding every tap reads inside the input for every output: nothing to zero.
  if (p.padding[0] != 0 || p.padding[1] != 0) cpu::fill(cols, 0);
  const auto st = in.strides();
  for (int64_t i = 0; i < KH; ++i)
    for (int64_t j = 0; j < KW; ++j) {
      const auto [h0, h1] = valid_outputs(OH, H, p.stride[0], p.padding[0], i * p.dilation[0]);
      const auto [w0, w1] = valid_outputs(OW, W, p.stride[1], p.padding[1], j * p.dilation[1]);
      if (h0 == h1 || w0 == w1) continue;
      // [N, valid OH, valid OW, C] of the matrix's columns for tap (i, j) and of the input.
      const Tensor dst = alias_with(cols, {N, h1 - h0, w1 - w0, C}, {OH * OW * KH * KW * C, OW * KH * KW * C, KH * KW * C, 1},
                                    cols.storage_offset() + (h0 * OW + w0) * KH * KW * C + (i * KW + j) * C);
      const int64_t ih = h0 * p.stride[0] - p.padding[0] + i * p.dilation[0];
      const int64_t iw = w0 * p.stride[1] - p.padding[1] + j * p.dilation[1];
      const Tensor src = alias_with(in, {N, h1 - h0, w1 - w0, C}, {st[0], st[2] * p.stride[0], st[3] * p.stride[1], st[1]},
                                    in.storage_offset() + ih * st[2] + iw * st[3]);
      cpu::copy(dst, src);
    }
  return cols;
}

}  // namespace

std::string amx_matmul_backward_input_rejects(const ConvBackwardInput& c) {
  if (std::string why = amx_rejects({&c.grad_in, &c.grad_out}, c.weight, c.p); !why.empty()) return why;
  if (!one_by_one_unpadded(c.weight, c.p)) return "not an unpadded 1x1 kernel";
  return "";
}

void backward_input_as_matmul(const ConvBackwardInput& c) {
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

std::string amx_matmul_backward_weight_rejects(const ConvBackwardWeight& c) {
  if (std::string why = amx_rejects({&c.in, &c.grad_out}, c.grad_weight, c.p); !why.empty()) return why;
  if (c.grad_bias.defined()) return "computes a bias gradient";
  if (!one_by_one_unpadded(c.grad_weight, c.p) && c.grad_out.sizes()[3] >= 16)
    return "oneDNN's convolution kernel keeps up where output rows hold 16 pixels or more";
  return "";
}

void backward_weight_as_matmul(const ConvBackwardWeight& c) {
  const Tensor cols = input_columns(c.in, c.grad_weight, c.grad_out, c.p);
  const bool in_place = c.grad_weight.is_contiguous(MemoryFormat::ChannelsLast);
  const Tensor gw = in_place ? c.grad_weight : channels_last_empty(c.grad_weight);
  dnnl_ops::matmul({weight_matrix(gw), pixel_rows(nhwc_view_or_copy(c.grad_out), true), cols, Tensor()});
  if (!in_place) cpu::copy(c.grad_weight, gw);
}

}  // namespace strider::kernels
