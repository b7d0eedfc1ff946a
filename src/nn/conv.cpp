#include "strider/nn/conv.h"

#include <cmath>

#include "strider/autograd/functions.h"
#include "strider/nn/init.h"
#include "strider/ops/factory.h"

namespace strider::nn {

ConvNd::ConvNd(std::string type, int64_t nsp, bool transposed, ConvOptions o)
    : Module(std::move(type)), nsp_(nsp), transposed_(transposed), options_(std::move(o)) {
  const char* name = type_name().c_str();
  STRIDER_CHECK(options_.in_channels > 0 && options_.out_channels > 0, name, "in_channels and out_channels must be "
                "positive, got ", options_.in_channels, " and ", options_.out_channels);
  STRIDER_CHECK(options_.groups > 0 && options_.in_channels % options_.groups == 0 &&
                options_.out_channels % options_.groups == 0, name, "in_channels (", options_.in_channels,
                ") and out_channels (", options_.out_channels, ") must be divisible by groups (", options_.groups, ")");
  STRIDER_CHECK(!options_.kernel_size.empty(), name, "kernel_size is required (PyTorch has no default either): "
                "{.in_channels = ", options_.in_channels, ", .out_channels = ", options_.out_channels,
                ", .kernel_size = {3}}");
  if (options_.kernel_size.size() == 1) options_.kernel_size = DimVector(nsp, options_.kernel_size[0]);
  STRIDER_CHECK(static_cast<int64_t>(options_.kernel_size.size()) == nsp, name, "kernel_size must have 1 or ", nsp,
                " values, got ", IntArrayRef(options_.kernel_size));
  for (int64_t k : options_.kernel_size) STRIDER_CHECK(k > 0, name, "kernel sizes must be positive, got ", IntArrayRef(options_.kernel_size));
  DimVector shape = transposed ? DimVector{options_.in_channels, options_.out_channels / options_.groups}
                               : DimVector{options_.out_channels, options_.in_channels / options_.groups};
  shape.append(options_.kernel_size.begin(), options_.kernel_size.end());
  register_parameter("weight", empty(shape));
  if (options_.bias) register_parameter("bias", empty({options_.out_channels}));
  reset_parameters();
}

void ConvNd::reset_parameters(Generator* gen) {
  init::kaiming_uniform_(param("weight"), std::sqrt(5.0), true, "leaky_relu", gen);
  if (has_param("bias")) {
    auto [fan_in, fan_out] = init::fans(param("weight"));
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    init::uniform_(param("bias"), -bound, bound, gen);
  }
}

Tensor ConvNd::forward(const Tensor& x) {
  const Tensor& w = param("weight");
  Tensor b = has_param("bias") ? param("bias") : Tensor();
  const auto& o = options_;
  if (!transposed_) {
    if (nsp_ == 1) return conv1d(x, w, b, o.stride, o.padding, o.dilation, o.groups);
    if (nsp_ == 2) return conv2d(x, w, b, o.stride, o.padding, o.dilation, o.groups);
    return conv3d(x, w, b, o.stride, o.padding, o.dilation, o.groups);
  }
  if (nsp_ == 2) return conv_transpose2d(x, w, b, o.stride, o.padding, o.output_padding, o.groups, o.dilation);
  return conv_transpose3d(x, w, b, o.stride, o.padding, o.output_padding, o.groups, o.dilation);
}

}  // namespace strider::nn
