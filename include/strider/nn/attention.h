#pragma once
// torch.nn.MultiheadAttention, with PyTorch 1.13's parameter names, shapes and semantics, so a
// PyTorch state dict loads unchanged:
//   in_proj_weight [3E, E] and in_proj_bias [3E] (or q_proj_weight [E, E], k_proj_weight
//   [E, kdim], v_proj_weight [E, vdim] when kdim or vdim differ from E), out_proj.weight [E, E],
//   out_proj.bias [E], and bias_k, bias_v [1, 1, E] with add_bias_kv.
//
// Shapes: query [L, N, E], key [S, N, kdim], value [S, N, vdim] ([N, L, E] ... with
// batch_first; [L, E] ... unbatched). Masks: key_padding_mask [N, S] ([S] unbatched), bool
// (true: ignore that key) or floating (added to the scores); attn_mask [L, S] or [N * H, L, S],
// bool (true: not allowed) or floating (added). Returns the output [L, N, E] (with batch_first,
// [N, L, E] with PyTorch's strides: the transposed view (E, N*E, 1), or contiguous where PyTorch
// would take its fused inference path: eval, no grad, one tensor as query, key and value, an
// even head count, no attn_mask, dropout, bias_kv or zero_attn) and, with
// need_weights, the attention weights after dropout, [N, L, S] averaged over heads (or
// [N, H, L, S] with average_attn_weights = false). A query row whose keys are all masked gives
// NaN, as in PyTorch. Without weights, masks or active dropout, the fused attention kernel runs
// (ops/attention.h) and no [L, S] matrix is formed.
//
// Called as a module with PyTorch's argument names:
//   Value r = (*mha)(q, k, v, nn::kw("key_padding_mask", pad), nn::kw("need_weights", false));
//   Tensor out = r[0].tensor();   // r[1] is the weights, or None
#include <optional>
#include <utility>

#include "strider/core/generator.h"
#include "strider/nn/module.h"

namespace strider::nn {

struct MultiheadAttentionOptions {
  double dropout = 0.0;  // on the attention weights, in training
  bool bias = true;
  bool add_bias_kv = false;
  bool add_zero_attn = false;
  int64_t kdim = 0, vdim = 0;  // 0: embed_dim
  bool batch_first = false;
};

class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, MultiheadAttentionOptions options = {});

  using Module::forward;
  // (output, weights); the weights are undefined unless need_weights.
  std::pair<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& key_padding_mask = Tensor(), bool need_weights = true,
                                    const Tensor& attn_mask = Tensor(), bool average_attn_weights = true);
  // (query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
  //  average_attn_weights=True) -> [output, weights or None]
  Value forward_args(const Args& args) override;

  // PyTorch's initialization: Xavier-uniform projections, zero biases, Xavier-normal bias_k/v.
  void reset_parameters(Generator* gen = nullptr);

  int64_t embed_dim() const { return embed_dim_; }
  int64_t num_heads() const { return num_heads_; }
  const MultiheadAttentionOptions& options() const { return options_; }

 private:
  int64_t embed_dim_, num_heads_, head_dim_;
  MultiheadAttentionOptions options_;

  bool packed_;  // one in_proj_weight (kdim == vdim == embed_dim)
  std::shared_ptr<Module> out_proj_;
};

}  // namespace strider::nn
