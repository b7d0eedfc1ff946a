#pragma once
// One Adam/AdamW step over a parameter and its state in a single pass (the optimizer's update as
// a fused kernel). The arithmetic is the optimizer's sequence of tensor ops element by element,
// each rounded as those ops round it (one FMA where an op adds alpha times a tensor), so the
// result is bit for bit what the sequence gives, in one read and write of each array instead of
// about a dozen passes and five temporaries.
#include <cstdint>

#include "strider/core/tensor.h"

namespace strider::kernels {

struct AdamStep {
  float param_scale;  // 1 - lr * weight_decay (decoupled decay), else 1
  float grad_decay;   // weight_decay (L2 decay added to the gradient), else 0
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float bias_correction2_sqrt, eps;
  float step;  // -lr / bias_correction1
};

// Why adam_step cannot run on these tensors ("" when it can): it takes contiguous float32
// tensors of one shape that do not overlap.
std::string adam_step_rejects(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq);
void adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
               const AdamStep& s);

}  // namespace strider::kernels
