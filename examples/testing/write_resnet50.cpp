// Test helper for load_pytorch_checkpoint: writes models::resnet50's state dict (seeded) and a
// reference input with its logits computed in contiguous float32.
#include <strider/strider.h>

using namespace strider;

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  manual_seed(50);
  auto model = models::resnet50();
  model->eval();
  NoGradGuard no_grad;
  // Random batch-norm statistics (small means, variances around 1), so the check covers the
  // buffers too and the activations neither vanish nor explode.
  for (auto& [name, b] : model->named_buffers()) {
    if (name.find("running_mean") != std::string::npos) b.copy_(randn(b.sizes()) * 0.1);
    if (name.find("running_var") != std::string::npos) b.copy_(rand(b.sizes()) + 0.5);
  }
  io::save_safetensors(argv[1], model->state_dict());
  Tensor input = randn({2, 3, 224, 224});
  io::save_safetensors(argv[2], {{"input", input}, {"logits", (*model)(input)}});
  return 0;
}
