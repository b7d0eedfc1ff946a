#pragma once
// What DDP and FSDP compare across ranks before any collective touches a parameter: the
// wrapped model's structure (names, shapes, dtypes, memory formats) and the wrapper's options.
// Ranks that differ would issue different collectives, so the job ends naming the first rank
// that differs and the first difference instead.
#include <string>
#include <vector>

#include "strider/dist/process_group.h"
#include "strider/nn/module.h"

namespace strider::fsdp::detail {

// One line per parameter and buffer: "param layer1.0.conv1.weight [64, 64, 3, 3] float32 channels_last".
std::vector<std::string> describe_structure(nn::Module& module);

// check_same_across_ranks over the structure followed by `option_lines`.
void check_structure_across_ranks(dist::ProcessGroup& pg, const std::string& wrapper, nn::Module& module,
                                  const std::vector<std::string>& option_lines);

}  // namespace strider::fsdp::detail
