// Convolution: argument checks with PyTorch's messages, the channels-last-dominates layout
// decision and output shape; the kernels' implementation list (kernels/conv.h) computes.
#include "strider/ops/conv.h"

#include <sstream>

#include "core/make_tensor.h"
#include "kernels/channels_last_detour.h"
#include "kernels/conv.h"
#include "ops/dense_in_format.h"
#include "ops/kernel_dispatch.h"
#include "strider/core/layout.h"
#include "strider/ops/check_mode.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"
#include "strider/ops/reduce.h"
#include "strider/ops/view.h"

namespace strider::ops {
namespace {

const char* op_name(int64_t nsp, bool transposed) {
  static const char* names[2][4] = {{"conv0d", "conv1d", "conv2d", "conv3d"},
                                    {"conv_transpose0d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}};
  return names[transposed][std::min<int64_t>(nsp, 3)];
}

DimVector expand_param(const DimVector& v, int64_t nsp, const char* name, const char* op) {
  if (static_cast<int64_t>(v.size()) == nsp) return v;
  STRIDER_CHECK(v.size() == 1, op, name, " must have 1 or ", nsp, " values, got ", IntArrayRef(v));
  return DimVector(nsp, v[0]);
}

kernels::ConvParams kernel_params(const ConvArgs& a, int64_t nsp, const char* op) {
  kernels::ConvParams p;
  p.stride = expand_param(a.stride, nsp, "stride", op);
  p.padding = expand_param(a.padding, nsp, "padding", op);
  p.dilation = expand_param(a.dilation, nsp, "dilation", op);
  p.output_padding = expand_param(a.output_padding, nsp, "output_padding", op);
  p.groups = a.groups;
  p.transposed = a.transposed;
  for (int64_t i = 0; i < nsp; ++i) {
    STRIDER_CHECK(p.stride[i] > 0, op, "non-positive stride is not supported (stride ", IntArrayRef(p.stride), ")");
    STRIDER_CHECK(p.padding[i] >= 0, op, "negative padding is not supported (padding ", IntArrayRef(p.padding), ")");
    STRIDER_CHECK(p.dilation[i] > 0, op, "dilation should be greater than zero (dilation ", IntArrayRef(p.dilation), ")");
  }
  STRIDER_CHECK(p.groups > 0, op, "non-positive groups is not supported (groups ", p.groups, ")");
  return p;
}

std::string dims_x(IntArrayRef v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i) os << (i ? " x " : "") << v[i];
  return os.str();
}

DimVector output_shape(const Tensor& in, const Tensor& w, const kernels::ConvParams& p, const char* op) {
  const int64_t nsp = in.dim() - 2;
  DimVector out = {in.sizes()[0], p.transposed ? w.sizes()[1] * p.groups : w.sizes()[0]};
  DimVector padded, kernel;
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t I = in.sizes()[2 + i], k = w.sizes()[2 + i];
    const int64_t s = p.stride[i], pad = p.padding[i], d = p.dilation[i];
    if (p.transposed) {
      STRIDER_CHECK(p.output_padding[i] < s || p.output_padding[i] < d, op, "output padding must be "
                    "smaller than either stride or dilation, got output_padding ", IntArrayRef(p.output_padding));
      out.push_back((I - 1) * s - 2 * pad + d * (k - 1) + p.output_padding[i] + 1);
    } else {
      padded.push_back(I + 2 * pad);
      kernel.push_back(d * (k - 1) + 1);
      out.push_back((I + 2 * pad - d * (k - 1) - 1) / s + 1);
    }
  }
  if (!p.transposed)
    for (size_t i = 0; i < padded.size(); ++i)
      STRIDER_CHECK(padded[i] >= kernel[i], op, "Calculated padded input size per channel: (",
                    dims_x(padded), "). Kernel size: (", dims_x(kernel),
                    "). Kernel size can't be greater than actual input size");
  for (int64_t i = 2; i < static_cast<int64_t>(out.size()); ++i)
    STRIDER_CHECK(out[i] > 0, op, "computed output size ", IntArrayRef(out), " is too small for input ",
                  in.sizes(), " and weight ", w.sizes());
  return out;
}

void check_args(const Tensor& in, const Tensor& w, const Tensor& bias, const kernels::ConvParams& p, const char* op) {
  const int64_t nsp = w.dim() - 2;
  STRIDER_CHECK(in.dim() == w.dim(), op, "Expected ", nsp + 1, "D (unbatched) or ", nsp + 2,
                "D (batched) input to ", op, ", but got input of size: ", in.sizes());
  STRIDER_CHECK(in.dtype() == w.dtype(), op, "input type (", in.dtype(), ") and weight type (",
                w.dtype(), ") should be the same; convert one of them with .to()");
  STRIDER_CHECK(is_floating_point(in.dtype()), op, "convolution needs floating-point tensors, got ", in.dtype());
  const int64_t expected_c = p.transposed ? w.sizes()[0] : w.sizes()[1] * p.groups;
  STRIDER_CHECK(in.sizes()[1] == expected_c, op, "Given groups=", p.groups, ", weight of size ", w.sizes(),
                ", expected input", in.sizes(), " to have ", expected_c, " channels, but got ",
                in.sizes()[1], " channels instead");
  STRIDER_CHECK(w.sizes()[0] % p.groups == 0, op, "weight of size ",
                w.sizes(), " is not divisible by groups=", p.groups);
  for (int64_t i = 2; i < in.dim(); ++i)
    STRIDER_CHECK(in.sizes()[i] > 0 || in.sizes()[0] == 0 || in.sizes()[1] == 0, op,
                  "Only zero batch or zero channel inputs are supported, but got input shape: ", in.sizes());
  if (bias.defined()) {
    const int64_t oc = p.transposed ? w.sizes()[1] * p.groups : w.sizes()[0];
    STRIDER_CHECK(bias.dim() == 1 && bias.sizes()[0] == oc, op, "expected bias of shape [", oc,
                  "] for weight ", w.sizes(), ", got ", bias.sizes());
    STRIDER_CHECK(bias.dtype() == in.dtype(), op, "bias type (", bias.dtype(), ") and input type (",
                  in.dtype(), ") should be the same");
  }
}

DimVector spatial_and_batch_dims(int64_t dim) {
  DimVector d = {0};
  for (int64_t i = 2; i < dim; ++i) d.push_back(i);
  return d;
}

}  // namespace

int64_t conv_weight_cache_bytes() { return kernels::conv_weight_cache_bytes(); }

MemoryFormat conv_memory_format(const Tensor& input, const Tensor& weight) {
  const MemoryFormat cl = input.dim() == 5 ? MemoryFormat::ChannelsLast3d : MemoryFormat::ChannelsLast;
  if (input.dim() != 4 && input.dim() != 5) return MemoryFormat::Contiguous;
  if (input.suggest_memory_format() == cl || weight.suggest_memory_format() == cl) return cl;
  return MemoryFormat::Contiguous;
}

Tensor convolution(const Tensor& input_arg, const Tensor& weight, const Tensor& bias, const ConvArgs& args) {
  const int64_t nsp = weight.dim() - 2;
  const char* op = op_name(nsp, args.transposed);
  STRIDER_CHECK(weight.dim() >= 3 && weight.dim() <= 5, op, "weight must be 3-d, 4-d or 5-d, got shape ", weight.sizes());
  // Unbatched input: add the batch dimension for the computation, drop it after.
  const bool unbatched = input_arg.dim() == weight.dim() - 1;
  Tensor input = unbatched ? unsqueeze(input_arg, 0) : input_arg;
  kernels::ConvParams p = kernel_params(args, nsp, op);
  check_args(input, weight, bias, p, op);
  const MemoryFormat fmt = conv_memory_format(input, weight);
  const bool empty_in = input.sizes()[0] == 0 || input.sizes()[1] == 0;
  DimVector shape = output_shape(input, weight, p, op);
  // PyTorch 1.13 gives a zero-channel input a zero-channel output (its "empty" path views the
  // empty product back with the input's channel count); the oracle pins it.
  if (!p.transposed && input.sizes()[1] == 0) shape[1] = 0;
  Tensor out = make_tensor(shape, layout::strides_for_format(shape, empty_in ? MemoryFormat::Contiguous : fmt, op),
                           input.dtype());
  if (empty_in) {
    // No input channels (or no images): the output is the bias alone.
    if (bias.defined() && out.numel() > 0) {
      DimVector bias_shape(shape.size(), 1);
      bias_shape[1] = shape[1];
      copy_(out, reshape(bias, bias_shape));
    } else {
      fill_(out, 0);
    }
    return unbatched ? squeeze(out, 0) : out;
  }
  Tensor in_c = dense_in_format(input, fmt);
  // The kernels read the bias as one dense row (a slice or an expanded bias was read as if it
  // were).
  kernels::conv_forward({out, in_c, weight, bias.defined() ? contiguous(bias) : bias, p}, dispatch(op));
  check_memory_format_kept(op, {&input, &weight}, out);
  return unbatched ? squeeze(out, 0) : out;
}

std::tuple<Tensor, Tensor, Tensor> convolution_backward(const Tensor& grad_out_arg, const Tensor& input_arg,
                                                        const Tensor& weight, const ConvArgs& args,
                                                        std::array<bool, 3> mask) {
  const int64_t nsp = weight.dim() - 2;
  const char* op = op_name(nsp, args.transposed);
  const bool unbatched = input_arg.dim() == weight.dim() - 1;
  Tensor input = unbatched ? unsqueeze(input_arg, 0) : input_arg;
  Tensor grad_out = unbatched ? unsqueeze(grad_out_arg, 0) : grad_out_arg;
  kernels::ConvParams p = kernel_params(args, nsp, op);
  const MemoryFormat fmt = conv_memory_format(input, weight);
  Tensor go = dense_in_format(grad_out.dtype() == input.dtype() ? grad_out : to(grad_out, input.dtype()), fmt);
  // Where the kernels detour through channels-last, both products read one copy of go.
  const kernels::ChannelsLastCopyReuse reuse;
  Tensor gi, gw, gb;
  const bool empty_in = input.numel() == 0;
  if (mask[0]) {
    gi = make_tensor(input.sizes().vec(), layout::strides_for_format(input.sizes(), fmt, op), input.dtype());
    if (empty_in || go.numel() == 0) fill_(gi, 0);
    else kernels::conv_backward_input({gi, go, weight, p}, dispatch(op));
    if (unbatched) gi = squeeze(gi, 0);
  }
  if (mask[1] || mask[2]) {
    // In the convolution's memory format, as PyTorch's mkldnn backward returns it (AccumulateGrad
    // then keeps these strides where they agree with the parameter's on every dim of size > 1).
    gw = make_tensor(weight.sizes().vec(), layout::strides_for_format(weight.sizes(), fmt, op), weight.dtype());
    if (mask[2]) gb = empty({p.transposed ? weight.sizes()[1] * p.groups : weight.sizes()[0]}, weight.dtype());
    if (empty_in || go.numel() == 0) {
      fill_(gw, 0);
      if (gb.defined()) {
        if (go.numel() == 0) fill_(gb, 0);
        else copy_(gb, sum(go, spatial_and_batch_dims(go.dim())));
      }
    } else {
      Tensor in_c = dense_in_format(input, fmt);
      kernels::conv_backward_weight({gw, gb, in_c, go, p}, dispatch(op));
    }
    if (!mask[1]) gw = Tensor();
  }
  return {gi, gw, gb};
}

}  // namespace strider::ops
