#pragma once
// Optimizers by name: the one table the trainer's --optimizer flag and a checkpoint's recorded
// optimizer name (Optimizer::name()) share. make_optimizer(name, ...)->name() == name.
//
//   auto opt = optim::make_optimizer("adamw", model->named_parameters(), {.lr = 3e-4});
//
// `options` are the optimizer's own (unset: PyTorch's defaults for that optimizer); setting one
// it does not have (beta1 for "sgd") is an Error naming the options it has.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "strider/optim/optimizer.h"

namespace strider::optim {

// "sgd", "adam", "adamw", in that order.
std::vector<std::string> optimizer_names();
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::vector<ParamGroup> groups,
                                          const GroupOptions& options = {});
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, NamedParameters params,
                                          const GroupOptions& options = {});
// The same, keeping the optimizer's state in `state_dtype` (AdamOptions::state_dtype: "adam" and
// "adamw"; unset: the parameters' dtype, for every optimizer).
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::vector<ParamGroup> groups,
                                          const GroupOptions& options, std::optional<ScalarType> state_dtype);

}  // namespace strider::optim
