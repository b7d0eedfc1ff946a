#include "strider/models/resnet.h"

#include "strider/autograd/functions.h"
#include "strider/nn/init.h"

namespace strider::models {
namespace {

std::shared_ptr<nn::Conv2d> conv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  return std::make_shared<nn::Conv2d>(nn::ConvOptions{.in_channels = in, .out_channels = out, .kernel_size = {k},
                                                      .stride = {stride}, .padding = {pad}, .bias = false});
}

std::shared_ptr<nn::Module> downsample_if_needed(int64_t in, int64_t out, int64_t stride) {
  if (stride == 1 && in == out) return nullptr;
  return std::make_shared<nn::Sequential>(
      std::initializer_list<std::shared_ptr<nn::Module>>{conv(in, out, 1, stride, 0), std::make_shared<nn::BatchNorm2d>(out)});
}

// A BatchNorm2d whose forward includes the ReLU that follows it, and the residual added before
// that when called with one (fused: fewer passes over memory each way).
std::shared_ptr<nn::BatchNorm2d> batch_norm_then_relu(int64_t c) {
  auto bn = std::make_shared<nn::BatchNorm2d>(c);
  bn->fuse_relu();
  return bn;
}

}  // namespace

BasicBlock::BasicBlock(int64_t in, int64_t planes, int64_t stride) : Module("BasicBlock") {
  conv1_ = register_module("conv1", conv(in, planes, 3, stride, 1));
  bn1_ = register_module("bn1", batch_norm_then_relu(planes));
  conv2_ = register_module("conv2", conv(planes, planes, 3, 1, 1));
  bn2_ = register_module("bn2", batch_norm_then_relu(planes));
  if (auto d = downsample_if_needed(in, planes, stride)) downsample_ = register_module("downsample", d);
}

Tensor BasicBlock::forward(const Tensor& x) {
  Tensor out = (*bn1_)((*conv1_)(x));  // bn1 includes its ReLU
  // bn2 adds the identity and applies the ReLU: relu(bn2(conv2(out)) + identity).
  return (*bn2_)((*conv2_)(out), downsample_ ? (*downsample_)(x) : x).tensor();
}

Bottleneck::Bottleneck(int64_t in, int64_t planes, int64_t stride) : Module("Bottleneck") {
  conv1_ = register_module("conv1", conv(in, planes, 1, 1, 0));
  bn1_ = register_module("bn1", batch_norm_then_relu(planes));
  conv2_ = register_module("conv2", conv(planes, planes, 3, stride, 1));  // torchvision v1.5: stride on the 3x3
  bn2_ = register_module("bn2", batch_norm_then_relu(planes));
  conv3_ = register_module("conv3", conv(planes, planes * kExpansion, 1, 1, 0));
  bn3_ = register_module("bn3", batch_norm_then_relu(planes * kExpansion));
  if (auto d = downsample_if_needed(in, planes * kExpansion, stride)) downsample_ = register_module("downsample", d);
}

Tensor Bottleneck::forward(const Tensor& x) {
  Tensor out = (*bn1_)((*conv1_)(x));  // bn1 and bn2 include their ReLU
  out = (*bn2_)((*conv2_)(out));
  // bn3 adds the identity and applies the ReLU: relu(bn3(conv3(out)) + identity).
  return (*bn3_)((*conv3_)(out), downsample_ ? (*downsample_)(x) : x).tensor();
}

ResNet::ResNet(bool bottleneck, std::vector<int64_t> layers, std::vector<int64_t> widths, int64_t num_classes,
               int64_t in_channels, bool small_input)
    : Module("ResNet") {
  const int64_t expansion = bottleneck ? Bottleneck::kExpansion : BasicBlock::kExpansion;
  int64_t in = small_input ? widths[0] : 64;
  stem_ = register_module("conv1", small_input ? conv(in_channels, in, 3, 1, 1) : conv(in_channels, in, 7, 2, 3));
  bn_ = register_module("bn1", batch_norm_then_relu(in));
  if (!small_input) pool_ = register_module("maxpool", std::make_shared<nn::MaxPool2d>(DimVector{3}, DimVector{2}, DimVector{1}));
  for (size_t s = 0; s < layers.size(); ++s) {
    auto stage = std::make_shared<nn::Sequential>();
    for (int64_t b = 0; b < layers[s]; ++b) {
      const int64_t stride = (b == 0 && s > 0) ? 2 : 1;
      if (bottleneck) stage->push_back(std::make_shared<Bottleneck>(in, widths[s], stride));
      else stage->push_back(std::make_shared<BasicBlock>(in, widths[s], stride));
      in = widths[s] * expansion;
    }
    stages_.push_back(register_module("layer" + std::to_string(s + 1), stage));
  }
  fc_ = register_module("fc", std::make_shared<nn::Linear>(in, num_classes));
  // torchvision's init: kaiming-normal (fan_out) convs, unit/zero batch norm.
  apply([](nn::Module& m) {
    if (m.type_name() == "Conv2d") nn::init::kaiming_normal_(m.param("weight"), 0.0, false, "relu");
  });
}

Tensor ResNet::forward(const Tensor& x) {
  Tensor y = (*bn_)((*stem_)(x));  // bn1 includes its ReLU
  if (pool_) y = (*pool_)(y);
  for (auto& s : stages_) y = (*s)(y);
  y = adaptive_avg_pool2d(y, {1, 1}).flatten(1);
  return (*fc_)(y);
}

std::shared_ptr<ResNet> resnet18(int64_t nc, int64_t ic) {
  return std::make_shared<ResNet>(false, std::vector<int64_t>{2, 2, 2, 2}, std::vector<int64_t>{64, 128, 256, 512}, nc, ic, false);
}
std::shared_ptr<ResNet> resnet34(int64_t nc, int64_t ic) {
  return std::make_shared<ResNet>(false, std::vector<int64_t>{3, 4, 6, 3}, std::vector<int64_t>{64, 128, 256, 512}, nc, ic, false);
}
std::shared_ptr<ResNet> resnet50(int64_t nc, int64_t ic) {
  return std::make_shared<ResNet>(true, std::vector<int64_t>{3, 4, 6, 3}, std::vector<int64_t>{64, 128, 256, 512}, nc, ic, false);
}
std::shared_ptr<ResNet> fmnist_resnet(int64_t nc, int64_t ic) {
  return std::make_shared<ResNet>(false, std::vector<int64_t>{2, 2, 2}, std::vector<int64_t>{16, 32, 64}, nc, ic, true);
}

std::shared_ptr<nn::Sequential> small_cnn(int64_t nc, int64_t ic) {
  auto c = [](int64_t in, int64_t out) {
    return std::make_shared<nn::Conv2d>(nn::ConvOptions{.in_channels = in, .out_channels = out, .kernel_size = {3}, .padding = {1}});
  };
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      c(ic, 32), std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(DimVector{2}),
      c(32, 64), std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(DimVector{2}),
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(64 * 7 * 7, 128), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(128, nc)});
}

}  // namespace strider::models
