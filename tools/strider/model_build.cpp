#include "model_build.h"

#include <optional>
#include <set>

namespace strider::tools {

std::shared_ptr<nn::Module> build_model(TrainTask& task, const TrainOptions& o) {
  std::shared_ptr<nn::Module> model;
  {
    std::optional<nn::DeferredInit> deferred;
    if (o.deferred_init) deferred.emplace(o.seed);
    model = task.make_model();
  }
  if (o.activation_checkpointing) {
    // The models' repeated blocks: what FSDP wraps as units and what PyTorch's recipes checkpoint.
    static const std::set<std::string> kBlocks = {"Block", "BasicBlock", "Bottleneck"};
    const int n = nn::apply_activation_checkpointing(*model, [](nn::Module& m) { return kBlocks.count(m.type_name()) > 0; });
    STRIDER_CHECK(n > 0, "train", "--activation-checkpointing: ", task.model_signature(),
                  " has no blocks to checkpoint (GPT's Block, ResNet's BasicBlock or Bottleneck); use --model gpt, "
                  "fmnist_resnet or resnet18, or leave the flag out");
  }
  model->to(memory_format_from_string(o.memory_format));
  return model;
}

}  // namespace strider::tools
