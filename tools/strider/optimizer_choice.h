#pragma once
// The optimizers --optimizer offers (optim::optimizer_names()), and the one place that builds
// them with the trainer's recipe.
#include <memory>
#include <string>
#include <vector>

#include <strider/strider.h>

#include "train_options.h"

namespace strider::tools {

std::vector<std::string> optimizer_names();

// `name` over params, with --lr and --weight-decay; throws strider::Error for an unknown name.
std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name, optim::NamedParameters params,
                                                 const TrainOptions& options);

}  // namespace strider::tools
