#pragma once
// An optimizer's settings as text, for checking that data-parallel ranks agree on them.
#include <string>
#include <vector>

#include "strider/optim/optimizer.h"

namespace strider::optim {

// The optimizer's kind and every param group's options, one per line ("optimizer sgd",
// "param groups 1", "group 0 lr 0.10000000000000001", ...; values printed exactly): what
// data-parallel ranks must agree on. FSDP's register_optimizer and every checkpoint save compare
// it across ranks (dist::check_same_across_ranks names the rank and the first line that differs).
std::vector<std::string> describe_settings(const Optimizer& optimizer);

}  // namespace strider::optim
