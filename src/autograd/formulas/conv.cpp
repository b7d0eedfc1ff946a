// Differentiable convolutions: the forward and both backward passes are ops::convolution*.
#include "autograd/formulas/grad_utils.h"
#include "strider/autograd/functions.h"
#include "strider/ops/conv.h"

namespace strider {

using autograd::Node;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

namespace {

Tensor convolution(const char* name, const Tensor& input, const Tensor& weight, const Tensor& bias,
                   ops::ConvArgs args) {
  Tensor out = ops::convolution(input, weight, bias, args);
  if (!autograd::any_requires_grad({&input, &weight, &bias})) return out;
  SavedTensor si(input), sw(weight);
  const bool has_bias = bias.defined();
  return autograd::record(name, {&input, &weight, &bias}, out, [=](const Grads& g, const Node& n) -> Grads {
    auto [gi, gw, gb] = ops::convolution_backward(g[0], si.unpack(name), sw.unpack(name), args,
                                                   {n.needs_input_grad(0), n.needs_input_grad(1),
                                                    has_bias && n.needs_input_grad(2)});
    return {gi, gw, gb};
  });
}

ops::ConvArgs conv_args(IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  ops::ConvArgs a;
  a.stride = stride.vec();
  a.padding = padding.vec();
  a.dilation = dilation.vec();
  a.groups = groups;
  return a;
}

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  STRIDER_CHECK(weight.dim() == 3, "conv1d", "weight must be 3-d [Cout, Cin/groups, k], got ", weight.sizes());
  return convolution("Conv1dBackward", input, weight, bias, conv_args(stride, padding, dilation, groups));
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  STRIDER_CHECK(weight.dim() == 4, "conv2d", "weight must be 4-d [Cout, Cin/groups, kH, kW], got ", weight.sizes());
  return convolution("Conv2dBackward", input, weight, bias, conv_args(stride, padding, dilation, groups));
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  STRIDER_CHECK(weight.dim() == 5, "conv3d", "weight must be 5-d [Cout, Cin/groups, kD, kH, kW], got ", weight.sizes());
  return convolution("Conv3dBackward", input, weight, bias, conv_args(stride, padding, dilation, groups));
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  STRIDER_CHECK(weight.dim() == 4, "conv_transpose2d", "weight must be 4-d [Cin, Cout/groups, kH, kW], got ", weight.sizes());
  ops::ConvArgs a = conv_args(stride, padding, dilation, groups);
  a.output_padding = output_padding.vec();
  a.transposed = true;
  return convolution("ConvTranspose2dBackward", input, weight, bias, a);
}
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  STRIDER_CHECK(weight.dim() == 5, "conv_transpose3d", "weight must be 5-d [Cin, Cout/groups, kD, kH, kW], got ", weight.sizes());
  ops::ConvArgs a = conv_args(stride, padding, dilation, groups);
  a.output_padding = output_padding.vec();
  a.transposed = true;
  return convolution("ConvTranspose3dBackward", input, weight, bias, a);
}

}  // namespace strider
