// Loading a PyTorch checkpoint: torchvision's ResNet-50 state dict saved as safetensors (names
// unchanged, e.g. with safetensors.torch.save_file(model.state_dict(), path)) goes into
// models::resnet50 as is, and inference runs in channels-last.
//   ./load_pytorch_checkpoint resnet50.safetensors [reference.safetensors]
// A reference file ("input" [N, 3, 224, 224], "logits" [N, 1000]) makes it check the logits.
#include <strider/strider.h>

#include <iostream>

using namespace strider;

int main(int argc, char** argv) {
  try {
    if (argc < 2) throw Error("usage: load_pytorch_checkpoint CHECKPOINT.safetensors [REFERENCE.safetensors]");
    auto model = models::resnet50();
    model->load_state_dict(io::load_safetensors(argv[1]).tensors);  // strict: every name must match
    model->to(MemoryFormat::ChannelsLast);
    model->eval();
    NoGradGuard no_grad;

    io::TensorMap reference;
    if (argc > 2) reference = io::load_safetensors(argv[2]).tensors;
    Tensor input = reference.count("input") ? reference.at("input") : randn({1, 3, 224, 224});
    Tensor logits = (*model)(input.contiguous(MemoryFormat::ChannelsLast));
    Tensor top = argmax(logits, 1);
    std::cout << "predicted classes " << top << "\n";
    if (!reference.count("logits")) return 0;
    const double diff = amax(abs(logits - reference.at("logits"))).item<double>();
    const double scale = amax(abs(reference.at("logits"))).item<double>();
    std::cout << "max |logits - reference| = " << diff << " (largest logit " << scale << ")\n";
    return diff <= 1e-4 * std::max(scale, 1.0) ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "load_pytorch_checkpoint: " << e.what() << "\n";
    return 1;
  }
}
