// A strided convolution's input gradient as one stride-1 convolution per phase (conv_phases.h).
#include "kernels/conv_phases.h"

#include "core/make_tensor.h"
#include "kernels/channels_last_detour.h"
#include "kernels/copy.h"
#include "kernels/cpu_isa.h"

namespace strider::kernels {
namespace {

// One phase f along one dim: its taps k0, k0 + s, ... (`taps` of them), the correlation's
// padding before, and how many input pixels it covers.
struct Phase {
  int64_t first_tap = 0, taps = 0, pad_before = 0, pad_after = 0, size = 0;
};

Phase phase(int64_t f, int64_t stride, int64_t pad, int64_t kernel, int64_t in_size, int64_t out_size) {
  Phase ph;
  ph.first_tap = (f + pad) % stride;
  ph.taps = ph.first_tap < kernel ? (kernel - ph.first_tap + stride - 1) / stride : 0;
  const int64_t q = (f + pad - ph.first_tap) / stride;
  ph.size = f < in_size ? (in_size - f + stride - 1) / stride : 0;
  ph.pad_before = ph.taps - 1 - q;
  // A stride-1 correlation's output size is out_size + pad_before + pad_after - taps + 1.
  ph.pad_after = ph.size - out_size - ph.pad_before + ph.taps - 1;
  return ph;
}

// The phase's weight [Cin, Cout, JH, JW] (channels-last): tap (uh, uw) is the convolution's
// weight at (first + (J - 1 - u) * stride) per dim, its [Cout, Cin] matrix transposed.
Tensor phase_weight(const Tensor& w, const Phase& h, const Phase& v, const ConvParams& p) {
  const int64_t cout = w.sizes()[0], cin = w.sizes()[1];
  Tensor out = make_tensor({cin, cout, h.taps, v.taps}, {h.taps * v.taps * cout, 1, v.taps * cout, cout}, w.dtype());
  const auto ws = w.strides();
  for (int64_t uh = 0; uh < h.taps; ++uh)
    for (int64_t uw = 0; uw < v.taps; ++uw) {
      const int64_t kh = h.first_tap + (h.taps - 1 - uh) * p.stride[0];
      const int64_t kw = v.first_tap + (v.taps - 1 - uw) * p.stride[1];
      const Tensor src = alias_with(w, {cin, cout}, {ws[1], ws[0]}, w.storage_offset() + kh * ws[2] + kw * ws[3]);
      const Tensor dst = alias_with(out, {cin, cout}, {h.taps * v.taps * cout, 1}, (uh * v.taps + uw) * cout);
      cpu::copy(dst, src);
    }
  return out;
}

}  // namespace

std::string phase_convolutions_rejects(const ConvBackwardInput& c) {
  const ConvParams& p = c.p;
  if (!cpu_has(Isa::amx_bf16)) return "needs AMX (amx_bf16), which this CPU (or STRIDER_MAX_CPU_ISA) lacks";
  if (c.weight.dtype() != kBFloat16 || c.grad_in.dtype() != kBFloat16 || c.grad_out.dtype() != kBFloat16)
    return "not bfloat16";
  if (p.transposed || p.groups != 1 || c.weight.dim() != 4) return "not an ungrouped 2-d convolution";
  if (p.stride[0] == 1 && p.stride[1] == 1) return "not strided";
  if (p.dilation[0] != 1 || p.dilation[1] != 1) return "dilated";
  if (c.weight.sizes()[2] == 1 && c.weight.sizes()[3] == 1) return "a 1x1 kernel";
  for (const Tensor* t : {&c.grad_in, &c.grad_out})
    if (!t->is_contiguous() && !t->is_contiguous(MemoryFormat::ChannelsLast)) return "data not dense";
  for (int64_t d = 0; d < 2; ++d)
    for (int64_t f = 0; f < p.stride[d]; ++f) {
      const Phase ph = phase(f, p.stride[d], p.padding[d], c.weight.sizes()[2 + d], c.grad_in.sizes()[2 + d],
                             c.grad_out.sizes()[2 + d]);
      if (ph.size == 0) continue;
      if (ph.taps == 0) return "a phase that no kernel tap reaches (kernel smaller than the stride)";
      if (ph.pad_before < 0 || ph.pad_after < 0) return "a phase that would need negative padding";
    }
  return "";
}

void backward_input_as_phase_convolutions(const ConvBackwardInput& c) {
  const ConvParams& p = c.p;
  const Tensor go = c.grad_out.is_contiguous(MemoryFormat::ChannelsLast) ? c.grad_out : channels_last_copy(c.grad_out);
  const int64_t N = c.grad_in.sizes()[0], cin = c.grad_in.sizes()[1];
  const auto gs = c.grad_in.strides();
  for (int64_t fh = 0; fh < p.stride[0]; ++fh)
    for (int64_t fw = 0; fw < p.stride[1]; ++fw) {
      const Phase h = phase(fh, p.stride[0], p.padding[0], c.weight.sizes()[2], c.grad_in.sizes()[2], go.sizes()[2]);
      const Phase v = phase(fw, p.stride[1], p.padding[1], c.weight.sizes()[3], c.grad_in.sizes()[3], go.sizes()[3]);
      if (h.size == 0 || v.size == 0) continue;
      Tensor out = make_tensor({N, cin, h.size, v.size}, {h.size * v.size * cin, 1, v.size * cin, cin}, go.dtype());
      ConvParams q;
      q.stride = {1, 1};
      q.padding = {h.pad_before, v.pad_before};
      q.dilation = {1, 1};
      q.output_padding = {0, 0};
      dnnl_ops::conv_forward(out, go, phase_weight(c.weight, h, v, p), Tensor(), q);
      // Every s-th pixel from (fh, fw) of grad_in.
      const Tensor dst = alias_with(c.grad_in, {N, cin, h.size, v.size}, {gs[0], gs[1], gs[2] * p.stride[0], gs[3] * p.stride[1]},
                                    c.grad_in.storage_offset() + fh * gs[2] + fw * gs[3]);
      cpu::copy(dst, out);
    }
}

}  // namespace strider::kernels
