#pragma once
// cat and stack (SPEC §12). cat allocates its output in the inputs' common suggested format:
// channels-last when every input suggests channels-last, contiguous otherwise.
#include <vector>

#include "strider/core/tensor.h"

namespace strider::ops {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);

}  // namespace strider::ops
