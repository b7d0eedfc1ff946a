#pragma once
// softmax / log_softmax along `dim`. Outputs are contiguous (SPEC §9, as PyTorch 1.13 on CPU).
#include "strider/core/tensor.h"

namespace strider::ops {

Tensor softmax(const Tensor& t, int64_t dim);
Tensor log_softmax(const Tensor& t, int64_t dim);

}  // namespace strider::ops
