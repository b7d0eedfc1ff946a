#pragma once
// The non-convolution layers: normalization, linear, embedding, activations, dropout, pooling,
// flatten; the containers (Sequential, ModuleList, ModuleDict) come with it.
#include <initializer_list>

#include "strider/core/generator.h"
#include "strider/nn/containers.h"
#include "strider/nn/module.h"

namespace strider::nn {

// BatchNorm over channel dim 1 of [N, C, ...] inputs (2-d: BatchNorm1d, 4-d: 2d, 5-d: 3d).
class BatchNorm : public Module {
 public:
  BatchNorm(std::string type, int64_t expected_dim, int64_t num_features, double eps = 1e-5,
            double momentum = 0.1, bool affine = true, bool track_running_stats = true);
  Tensor forward(const Tensor& input) override;
  // (input) or, with fuse_relu, (input, residual): relu(BatchNorm(input) + residual).
  Value forward_args(const Args& args) override;
  // From now on the module returns relu(BatchNorm(x)), the ReLU fused into the batch norm's passes
  // (F::batch_norm_relu), and may be called with a residual to add before the ReLU,
  // (*bn)(x, residual) (F::batch_norm_add_relu): for a batch norm always followed by a ReLU, as
  // in ResNet. The state dict is unchanged.
  BatchNorm& fuse_relu(bool on = true) {
    relu_ = on;
    return *this;
  }
  bool fuses_relu() const { return relu_; }

 private:
  Tensor normalize(const Tensor& x, const Tensor& residual);

  int64_t expected_dim_, num_features_;
  double eps_, momentum_;
  bool track_;
  bool relu_ = false;
};
class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(int64_t c, double eps = 1e-5, double m = 0.1) : BatchNorm("BatchNorm1d", 2, c, eps, m) {}
};
class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(int64_t c, double eps = 1e-5, double m = 0.1) : BatchNorm("BatchNorm2d", 4, c, eps, m) {}
};
class BatchNorm3d : public BatchNorm {
 public:
  explicit BatchNorm3d(int64_t c, double eps = 1e-5, double m = 0.1) : BatchNorm("BatchNorm3d", 5, c, eps, m) {}
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(DimVector normalized_shape, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& input) override;

 private:
  DimVector shape_;
  double eps_;
};

class GroupNorm : public Module {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& input) override;

 private:
  int64_t groups_;
  double eps_;
};

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& input) override;
  void reset_parameters(Generator* gen = nullptr);
};

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t dim);
  Tensor forward(const Tensor& indices) override;
};

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& x) override;
};
// The activation modules (torch.nn's, with its defaults; no `inplace` argument): each applies
// the function of the same name in nn/functional.h.
class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& x) override;
};
class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& x) override;
};
class SiLU : public Module {
 public:
  SiLU() : Module("SiLU") {}
  Tensor forward(const Tensor& x) override;
};
class Mish : public Module {
 public:
  Mish() : Module("Mish") {}
  Tensor forward(const Tensor& x) override;
};
class Hardswish : public Module {
 public:
  Hardswish() : Module("Hardswish") {}
  Tensor forward(const Tensor& x) override;
};
class Hardsigmoid : public Module {
 public:
  Hardsigmoid() : Module("Hardsigmoid") {}
  Tensor forward(const Tensor& x) override;
};
class SELU : public Module {
 public:
  SELU() : Module("SELU") {}
  Tensor forward(const Tensor& x) override;
};
class ReLU6 : public Module {
 public:
  ReLU6() : Module("ReLU6") {}
  Tensor forward(const Tensor& x) override;
};
class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : Module("LeakyReLU"), slope_(negative_slope) {}
  Tensor forward(const Tensor& x) override;

 private:
  double slope_;
};
class ELU : public Module {
 public:
  explicit ELU(double alpha = 1.0) : Module("ELU"), alpha_(alpha) {}
  Tensor forward(const Tensor& x) override;

 private:
  double alpha_;
};
class Softplus : public Module {
 public:
  explicit Softplus(double beta = 1.0, double threshold = 20.0);
  Tensor forward(const Tensor& x) override;

 private:
  double beta_, threshold_;
};
// PyTorch's nn.Hardtanh refuses max_val <= min_val.
class Hardtanh : public Module {
 public:
  explicit Hardtanh(double min_val = -1.0, double max_val = 1.0);
  Tensor forward(const Tensor& x) override;

 private:
  double min_, max_;
};
// softmax / log_softmax over `dim` (nn.Softmax(dim); PyTorch's dim=None guess is not offered).
class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim) : Module("Softmax"), dim_(dim) {}
  Tensor forward(const Tensor& x) override;

 private:
  int64_t dim_;
};
class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(int64_t dim) : Module("LogSoftmax"), dim_(dim) {}
  Tensor forward(const Tensor& x) override;

 private:
  int64_t dim_;
};
class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none") : Module("GELU"), approximate_(std::move(approximate)) {}
  Tensor forward(const Tensor& x) override;

 private:
  std::string approximate_;
};
class Identity : public Module {
 public:
  Identity() : Module("Identity") {}
  Tensor forward(const Tensor& x) override { return x; }
};
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5) : Module("Dropout"), p_(p) {}
  Tensor forward(const Tensor& x) override;

 private:
  double p_;
};
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : Module("Flatten"), start_(start_dim), end_(end_dim) {}
  Tensor forward(const Tensor& x) override { return x.flatten(start_, end_); }

 private:
  int64_t start_, end_;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(DimVector kernel, DimVector stride = {}, DimVector padding = {0}, bool ceil_mode = false)
      : Module("MaxPool2d"), k_(kernel), s_(stride), p_(padding), ceil_(ceil_mode) {}
  Tensor forward(const Tensor& x) override;

 private:
  DimVector k_, s_, p_;
  bool ceil_;
};
class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(DimVector kernel, DimVector stride = {}, DimVector padding = {0})
      : Module("AvgPool2d"), k_(kernel), s_(stride), p_(padding) {}
  Tensor forward(const Tensor& x) override;

 private:
  DimVector k_, s_, p_;
};
class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(DimVector output_size) : Module("AdaptiveAvgPool2d"), size_(output_size) {}
  Tensor forward(const Tensor& x) override;

 private:
  DimVector size_;
};

}  // namespace strider::nn
