#pragma once
// Optimizer updates as single-pass kernels. An optimizer tries the fused form first and falls
// back to its sequence of tensor ops when it does not apply; both give the same bits.
#include "strider/core/tensor.h"

namespace strider::ops {

struct AdamStepScalars {
  double lr, beta1, beta2, eps, weight_decay;
  bool decoupled_weight_decay;
  double bias_correction1, bias_correction2;  // 1 - beta^step
};

// One Adam(W) step of `param` (in place, with its moments) in one pass, when every tensor is
// contiguous float32 of one shape; returns false, changing nothing, otherwise.
bool try_fused_adam_step_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                          const AdamStepScalars& s);

}  // namespace strider::ops
