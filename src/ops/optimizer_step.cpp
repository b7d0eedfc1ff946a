#include "strider/ops/optimizer_step.h"

#include <cmath>

#include "kernels/adam.h"

namespace strider::ops {

bool try_fused_adam_step_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                          const AdamStepScalars& s, const AdamRounding& rounding) {
  const std::string why = kernels::adam_step_rejects(param, grad, exp_avg, exp_avg_sq);
  if (!why.empty()) return false;
  const bool decay = s.weight_decay != 0;
  // Each constant as the op sequence rounds it: the scalar operand or alpha of a float32 op.
  const kernels::AdamStep k{
      .param_scale = decay && s.decoupled_weight_decay ? static_cast<float>(1.0 - s.lr * s.weight_decay) : 1.0f,
      .grad_decay = decay && !s.decoupled_weight_decay ? static_cast<float>(s.weight_decay) : 0.0f,
      .beta1 = static_cast<float>(s.beta1),
      .one_minus_beta1 = static_cast<float>(1.0 - s.beta1),
      .beta2 = static_cast<float>(s.beta2),
      .one_minus_beta2 = static_cast<float>(1.0 - s.beta2),
      .bias_correction2_sqrt = static_cast<float>(std::sqrt(s.bias_correction2)),
      .eps = static_cast<float>(s.eps),
      .step = static_cast<float>(-s.lr / s.bias_correction1),
      .round_key_exp_avg = rounding.exp_avg,
      .round_key_exp_avg_sq = rounding.exp_avg_sq,
      .first_element = rounding.first_element};
  kernels::adam_step(param, grad, exp_avg, exp_avg_sq, k);
  // Written in place, as mul_ and add_ would have: saved-tensor checks, FSDP's gathered copies
  // and asynchronous checkpoints see the change.
  for (const Tensor* t : {&param, &exp_avg, &exp_avg_sq}) t->storage()->bump_version();
  return true;
}

std::string fused_adam_step_rejects(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                                    const Tensor& exp_avg_sq) {
  return kernels::adam_step_rejects(param, grad, exp_avg, exp_avg_sq);
}

}  // namespace strider::ops
