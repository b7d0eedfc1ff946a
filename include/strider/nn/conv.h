#pragma once
// Convolution layers: weight [out, in/groups, k...] ([in, out/groups, k...] transposed), PyTorch's
// default initialization (kaiming-uniform with a = sqrt(5), bias uniform in +-1/sqrt(fan_in)).
#include "strider/core/generator.h"
#include "strider/nn/module.h"

namespace strider::nn {

// in_channels, out_channels and kernel_size are required, as in PyTorch.
struct ConvOptions {
  int64_t in_channels = 0, out_channels = 0;
  DimVector kernel_size{};
  DimVector stride{1}, padding{0}, dilation{1}, output_padding{0};
  int64_t groups = 1;
  bool bias = true;
};

class ConvNd : public Module {
 public:
  ConvNd(std::string type, int64_t spatial_dims, bool transposed, ConvOptions options);
  Tensor forward(const Tensor& input) override;
  const ConvOptions& options() const { return options_; }
  Tensor& weight() { return param("weight"); }
  // Resets weight and bias the way PyTorch's layers initialize them.
  void reset_parameters(Generator* gen = nullptr);

 private:
  int64_t nsp_;
  bool transposed_;
  ConvOptions options_;
};

class Conv1d : public ConvNd {
 public:
  explicit Conv1d(ConvOptions o) : ConvNd("Conv1d", 1, false, std::move(o)) {}
};
class Conv2d : public ConvNd {
 public:
  explicit Conv2d(ConvOptions o) : ConvNd("Conv2d", 2, false, std::move(o)) {}
};
class Conv3d : public ConvNd {
 public:
  explicit Conv3d(ConvOptions o) : ConvNd("Conv3d", 3, false, std::move(o)) {}
};
class ConvTranspose2d : public ConvNd {
 public:
  explicit ConvTranspose2d(ConvOptions o) : ConvNd("ConvTranspose2d", 2, true, std::move(o)) {}
};
class ConvTranspose3d : public ConvNd {
 public:
  explicit ConvTranspose3d(ConvOptions o) : ConvNd("ConvTranspose3d", 3, true, std::move(o)) {}
};

}  // namespace strider::nn
