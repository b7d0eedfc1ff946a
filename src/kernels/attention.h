#pragma once
// Scaled dot-product attention over queries [B, H, L, D] and keys/values [B, H, S, D] that never
// holds the [L, S] score matrix: blocks of keys stream past a block of queries with an online
// softmax (running max and sum, FlashAttention-2, Dao 2023). The forward saves each query row's
// log-sum-exp of its scaled scores; the backward recomputes the probabilities block by block
// from it. Causal masking is top-left aligned: query i sees keys 0..i.
// The ordered list: cpu_amx (bfloat16 storage on CPUs whose AMX tiles this process may use) and
// cpu_bf16 (bfloat16 storage on CPUs with AVX512_BF16 and without AMX, whose cores run vdpbf16ps
// at half the FMA's rate): bfloat16 block products with float32 accumulation, the probabilities
// and score gradients rounded to bfloat16 for the products that take them; like the
// instructions, they read and write values below bfloat16's normal range as zero. Then cpu
// (float32, bfloat16, float16 computed in float32), all three for rows of unit stride; then ref
// (float64 accumulation, any floating dtype and strides).
#include "kernels/implementation_list.h"
#include "strider/core/tensor.h"

namespace strider::kernels {

// out [B, H, L, D] in q's dtype; lse [B, H, L] in float32 (float64 for float64 inputs).
struct AttentionForward {
  Tensor out, lse, q, k, v;
  double scale = 1.0;
  bool causal = false;
};

// dq, dk, dv shaped and typed as q, k, v; dout and out as out.
struct AttentionBackward {
  Tensor dq, dk, dv, dout, q, k, v, out, lse;
  double scale = 1.0;
  bool causal = false;
};

const ImplementationList<AttentionForward>& attention_forward_implementations();
const ImplementationList<AttentionBackward>& attention_backward_implementations();
void attention_forward(const AttentionForward& p, const Dispatch& d);
void attention_backward(const AttentionBackward& p, const Dispatch& d);

namespace cpu {
std::string attention_rejects(const std::vector<const Tensor*>& tensors);
std::string attention_bf16_rejects(const std::vector<const Tensor*>& tensors);
std::string attention_amx_rejects(const std::vector<const Tensor*>& tensors);
void attention_forward(const AttentionForward& p);
void attention_backward(const AttentionBackward& p);
void attention_forward_bf16(const AttentionForward& p);
void attention_backward_bf16(const AttentionBackward& p);
void attention_forward_amx(const AttentionForward& p);
void attention_backward_amx(const AttentionBackward& p);
}  // namespace cpu
namespace ref {
void attention_forward(const AttentionForward& p);
void attention_backward(const AttentionBackward& p);
}  // namespace ref

}  // namespace strider::kernels
