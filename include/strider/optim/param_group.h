#pragma once
// Parameter groups, as PyTorch's optimizer param_groups: parameters that share optimizer options.
// A group names only the options it overrides; the others come from the options the optimizer
// was built with. Typical use leaves biases and normalization weights out of weight decay:
//
//   optim::AdamW opt({{.params = decayed}, {.params = not_decayed, .options = {.weight_decay = 0.0}}},
//                    {.lr = 3e-4});
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "strider/core/tensor.h"

namespace strider::optim {

using NamedParameters = std::vector<std::pair<std::string, Tensor>>;

// Every option any strider optimizer has, under PyTorch's names (its `betas` pair is beta1 and
// beta2). Unset: the optimizer's own value. Setting one the optimizer does not have (beta1 for
// SGD) is an Error naming the options it does have.
struct GroupOptions {
  std::optional<double> lr = {}, momentum = {}, dampening = {}, weight_decay = {}, beta1 = {}, beta2 = {}, eps = {};
  std::optional<bool> nesterov = {}, maximize = {}, amsgrad = {};
};

struct ParamGroup {
  NamedParameters params = {};
  GroupOptions options = {};
};

}  // namespace strider::optim
