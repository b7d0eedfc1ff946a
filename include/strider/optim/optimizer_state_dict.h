#pragma once
// An optimizer's state in the layout of PyTorch's optimizer.state_dict():
//   {"state": {index: {"step": ..., "exp_avg": ...}}, "param_groups": [{"params": [indices], "lr": ...}]}
// Parameters are numbered by their position over the groups in order (Optimizer::params()), so a
// PyTorch state dict of an optimizer built on the same parameters in the same groups maps onto
// this one key for key. Strider's checkpoints key state by parameter name instead (the manifest,
// docs/design.md "Checkpoints"); this layout is for exchanging state with PyTorch and for tests.
//
// Mapping of PyTorch's entries:
//   state[i]["step"]        0-d float32 tensor (Adam/AdamW; PyTorch 1.13 keeps it so); SGD has none
//   state[i][other]         the tensors of Optimizer::state() for params()[i] (a PyTorch SGD
//                           "momentum_buffer": None is simply absent)
//   param_groups[g]         params and every option, PyTorch's "betas" as beta1/beta2;
//                           "initial_lr" as set by a scheduler. PyTorch's implementation switches
//                           (foreach, fused, capturable, differentiable) have no counterpart, and
//                           OneCycleLR's max_lr, min_lr, max_momentum, base_momentum are the
//                           scheduler's own state in strider.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "strider/core/tensor.h"
#include "strider/optim/param_group.h"

namespace strider::optim {

struct ParamGroupState {
  std::vector<int64_t> params = {};       // positions in Optimizer::params()
  GroupOptions options = {};              // every option the optimizer has, set
  std::optional<double> initial_lr = {};  // a scheduler's base lr for the group, once one was built
};

struct OptimizerStateDict {
  std::map<int64_t, std::map<std::string, Tensor>> state;
  std::vector<ParamGroupState> param_groups;
};

}  // namespace strider::optim
