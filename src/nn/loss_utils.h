#pragma once
// What the loss files share (src/nn/losses.cpp, src/nn/class_losses.cpp): reduction and weight
// checks, the reduction itself.
#include "strider/nn/functional.h"

namespace strider::nn::functional::detail {

// Refuses BatchMean (only kl_div takes it) and values outside the enum.
void check_reduction(const char* op, Reduction reduction);
// Mean, Sum or None of a per-element loss (after check_reduction).
Tensor apply_reduction(const Tensor& loss, Reduction reduction);
// A weight argument: floating, the input's dtype, not requiring grad (PyTorch's losses do not
// differentiate it), every element >= 0 (a NaN refused too).
void check_weight(const char* op, const char* name, const Tensor& weight, const Tensor& input);

}  // namespace strider::nn::functional::detail
