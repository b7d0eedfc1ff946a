#pragma once
// torch.nn.TransformerEncoderLayer (PyTorch 1.13), with its children's names (self_attn,
// linear1, dropout, linear2, norm1, norm2, dropout1, dropout2), so a PyTorch state dict loads
// unchanged. Post-norm by default (norm_first = false):
//   x = norm1(x + dropout1(self_attn(x, x, x, src_mask, src_key_padding_mask)))
//   x = norm2(x + dropout2(linear2(dropout(activation(linear1(x))))))
// src is [S, N, E] ([N, S, E] with batch_first; [S, E] unbatched); masks as in
// MultiheadAttention (src_mask is its attn_mask). Called as (*layer)(src) or
// (*layer)(src, nn::kw("src_key_padding_mask", pad)).
#include <string>

#include "strider/nn/attention.h"
#include "strider/nn/module.h"

namespace strider::nn {

struct TransformerEncoderLayerOptions {
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";  // "relu" or "gelu"
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;
};

class TransformerEncoderLayer : public Module {
 public:
  TransformerEncoderLayer(int64_t d_model, int64_t nhead, TransformerEncoderLayerOptions options = {});

  using Module::forward;
  Tensor forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = Tensor());
  // (src, src_mask=None, src_key_padding_mask=None) -> Tensor
  Value forward_args(const Args& args) override;

 private:
  Tensor self_attention_block(const Tensor& x, const Tensor& mask, const Tensor& padding);
  Tensor feed_forward_block(const Tensor& x);

  TransformerEncoderLayerOptions options_;
  std::shared_ptr<MultiheadAttention> self_attn_;
  std::shared_ptr<Module> linear1_, dropout_, linear2_, norm1_, norm2_, dropout1_, dropout2_;
};

}  // namespace strider::nn
