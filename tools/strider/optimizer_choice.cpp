#include "optimizer_choice.h"

namespace strider::tools {

std::vector<std::string> optimizer_names() { return {"sgd", "adamw"}; }

std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name, optim::NamedParameters params,
                                                 const TrainOptions& o) {
  if (name == "sgd")
    return std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions{.lr = o.lr, .momentum = 0.9,
                                                                             .weight_decay = o.weight_decay,
                                                                             .nesterov = true});
  STRIDER_CHECK(name == "adamw", "train", "unknown optimizer '", name, "'; use sgd or adamw");
  return std::make_unique<optim::AdamW>(std::move(params),
                                        optim::AdamOptions{.lr = o.lr, .weight_decay = o.weight_decay});
}

}  // namespace strider::tools
