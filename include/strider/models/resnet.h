#pragma once
// ResNets: torchvision's ResNet-18/34/50 (BasicBlock / Bottleneck, 7x7 stem, max pool), and a
// small CIFAR-style ResNet for 28x28 images (3x3 stem, no pooling stem) that the trainer uses
// on Fashion-MNIST.
#include <memory>

#include "strider/nn/conv.h"
#include "strider/nn/layers.h"

namespace strider::models {

class BasicBlock : public nn::Module {
 public:
  static constexpr int64_t kExpansion = 1;
  BasicBlock(int64_t in, int64_t planes, int64_t stride);
  Tensor forward(const Tensor& x) override;

 private:
  std::shared_ptr<nn::Module> conv1_, bn1_, conv2_, bn2_, downsample_;
};

class Bottleneck : public nn::Module {
 public:
  static constexpr int64_t kExpansion = 4;
  Bottleneck(int64_t in, int64_t planes, int64_t stride);
  Tensor forward(const Tensor& x) override;

 private:
  std::shared_ptr<nn::Module> conv1_, bn1_, conv2_, bn2_, conv3_, bn3_, downsample_;
};

class ResNet : public nn::Module {
 public:
  // small_input: 3x3 stride-1 stem without max pool (for 28x28 / 32x32 images).
  ResNet(bool bottleneck, std::vector<int64_t> layers, std::vector<int64_t> widths, int64_t num_classes,
         int64_t in_channels, bool small_input);
  Tensor forward(const Tensor& x) override;

 private:
  std::shared_ptr<nn::Module> stem_, bn_, pool_, fc_;
  std::vector<std::shared_ptr<nn::Module>> stages_;
};

std::shared_ptr<ResNet> resnet18(int64_t num_classes = 1000, int64_t in_channels = 3);
std::shared_ptr<ResNet> resnet34(int64_t num_classes = 1000, int64_t in_channels = 3);
std::shared_ptr<ResNet> resnet50(int64_t num_classes = 1000, int64_t in_channels = 3);
// Three stages of two basic blocks, widths 16/32/64 (174,970 parameters).
std::shared_ptr<ResNet> fmnist_resnet(int64_t num_classes = 10, int64_t in_channels = 1);

// Two conv layers, max pooling and two linear layers for 28x28 images.
std::shared_ptr<nn::Sequential> small_cnn(int64_t num_classes = 10, int64_t in_channels = 1);

}  // namespace strider::models
