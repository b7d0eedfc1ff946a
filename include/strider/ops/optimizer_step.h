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

// Stochastic rounding of bfloat16 moments (kernels/adam.h): each moment's stream for this step,
// and the whole parameter's element index of this tensor's first element.
struct AdamRounding {
  uint32_t exp_avg = 0, exp_avg_sq = 0;
  int64_t first_element = 0;
};

// One Adam(W) step of `param` (in place, with its moments) in one pass, when every tensor is
// contiguous and of one shape, the parameter and gradient float32 and the moments float32 or
// bfloat16 (rounded as `rounding` says); returns false, changing nothing, otherwise.
bool try_fused_adam_step_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                          const AdamStepScalars& s, const AdamRounding& rounding = {});
// Why the fused step does not apply to these tensors ("" when it does), for messages.
std::string fused_adam_step_rejects(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                                    const Tensor& exp_avg_sq);

}  // namespace strider::ops
