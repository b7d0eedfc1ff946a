#pragma once
// One Adam/AdamW step over a parameter and its state in a single pass (the optimizer's update as
// a fused kernel). The arithmetic is the optimizer's sequence of tensor ops element by element,
// each rounded as those ops round it (one FMA where an op adds alpha times a tensor), so the
// result is bit for bit what the sequence gives, in one read and write of each array instead of
// about a dozen passes and five temporaries.
//
// The moments may also be stored in bfloat16 (half the optimizer's memory; AdamOptions::
// state_dtype): each is widened to float32, updated as above, and rounded back stochastically,
// up with probability equal to the discarded fraction. Rounding to nearest would freeze the
// second moment: beta2 = 0.999 shrinks it by less than half a bfloat16 step, so it could never
// decay. The random bits come from a hash of (key, element), the element counted from the start
// of the whole parameter, so they do not depend on threads or on how ranks split the parameter.
#include <cstdint>

#include "strider/core/tensor.h"

namespace strider::kernels {

struct AdamStep {
  float param_scale;  // 1 - lr * weight_decay (decoupled decay), else 1
  float grad_decay;   // weight_decay (L2 decay added to the gradient), else 0
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float bias_correction2_sqrt, eps;
  float step;  // -lr / bias_correction1
  // bfloat16 moments only: the rounding streams of exp_avg and exp_avg_sq for this step, and the
  // whole parameter's element index of this tensor's first element (a shard's row offset x row size).
  uint32_t round_key_exp_avg = 0, round_key_exp_avg_sq = 0;
  int64_t first_element = 0;
};

// The random bits stochastic rounding adds below the kept 16 bits of `element` in stream `key`
// (the low 16 of the result are used). Exposed so tests can check the kernels against it.
uint32_t stochastic_rounding_bits(uint32_t key, int64_t element);
// `x` rounded to bfloat16 with these random bits: up with probability (discarded bits) / 2^16;
// a finite value past bfloat16's largest stays at it, NaN becomes the quiet NaN.
uint16_t round_to_bfloat16_stochastically(float x, uint32_t bits);

// Why adam_step cannot run on these tensors ("" when it can): it takes contiguous float32
// parameter and gradient, contiguous moments of one dtype (float32 or bfloat16), all of one shape
// and not overlapping.
std::string adam_step_rejects(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq);
void adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
               const AdamStep& s);

}  // namespace strider::kernels
