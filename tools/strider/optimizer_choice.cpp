#include "optimizer_choice.h"

namespace strider::tools {

std::vector<std::string> optimizer_names() { return optim::optimizer_names(); }

// optim's name table with the trainer's recipe on top of PyTorch's defaults: --lr and
// --weight-decay for every optimizer, and SGD with Nesterov momentum 0.9.
std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name, optim::NamedParameters params,
                                                 const TrainOptions& o) {
  optim::GroupOptions options{.lr = o.lr, .weight_decay = o.weight_decay};
  if (name == "sgd") {
    options.momentum = 0.9;
    options.nesterov = true;
  }
  std::optional<ScalarType> state_dtype;
  if (o.optimizer_state_dtype == "bfloat16") state_dtype = kBFloat16;  // float32: the parameters' own
  return optim::make_optimizer(name, std::vector<optim::ParamGroup>{{std::move(params), {}}}, options, state_dtype);
}

}  // namespace strider::tools
