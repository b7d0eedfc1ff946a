#include "strider/nn/transformer.h"

#include "strider/autograd/functions.h"
#include "strider/nn/forward_binding.h"
#include "strider/nn/layers.h"

namespace strider::nn {

TransformerEncoderLayer::TransformerEncoderLayer(int64_t d_model, int64_t nhead, TransformerEncoderLayerOptions o)
    : Module("TransformerEncoderLayer"), options_(std::move(o)) {
  STRIDER_CHECK(options_.activation == "relu" || options_.activation == "gelu", "TransformerEncoderLayer",
                "activation must be \"relu\" or \"gelu\", got \"", options_.activation, "\"");
  STRIDER_CHECK(options_.dim_feedforward > 0, "TransformerEncoderLayer", "dim_feedforward must be positive, got ",
                options_.dim_feedforward);
  // Registration order is PyTorch's, so named_parameters() lists the same names in the same order.
  self_attn_ = register_module(
      "self_attn", std::make_shared<MultiheadAttention>(
                       d_model, nhead, MultiheadAttentionOptions{.dropout = options_.dropout, .batch_first = options_.batch_first}));
  linear1_ = register_module("linear1", std::make_shared<Linear>(d_model, options_.dim_feedforward));
  dropout_ = register_module("dropout", std::make_shared<Dropout>(options_.dropout));
  linear2_ = register_module("linear2", std::make_shared<Linear>(options_.dim_feedforward, d_model));
  norm1_ = register_module("norm1", std::make_shared<LayerNorm>(DimVector{d_model}, options_.layer_norm_eps));
  norm2_ = register_module("norm2", std::make_shared<LayerNorm>(DimVector{d_model}, options_.layer_norm_eps));
  dropout1_ = register_module("dropout1", std::make_shared<Dropout>(options_.dropout));
  dropout2_ = register_module("dropout2", std::make_shared<Dropout>(options_.dropout));
}

Tensor TransformerEncoderLayer::self_attention_block(const Tensor& x, const Tensor& mask, const Tensor& padding) {
  Value r = (*self_attn_)(x, x, x, kw("attn_mask", mask.defined() ? Value(mask) : Value()),
                          kw("key_padding_mask", padding.defined() ? Value(padding) : Value()), kw("need_weights", false));
  return (*dropout1_)(r[0].tensor());
}

Tensor TransformerEncoderLayer::feed_forward_block(const Tensor& x) {
  Tensor h = (*linear1_)(x);
  h = options_.activation == "relu" ? relu(h) : gelu(h);
  return (*dropout2_)((*linear2_)((*dropout_)(h)));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask) {
  Tensor x = src;
  if (options_.norm_first) {
    x = x + self_attention_block((*norm1_)(x), src_mask, src_key_padding_mask);
    return x + feed_forward_block((*norm2_)(x));
  }
  x = (*norm1_)(x + self_attention_block(x, src_mask, src_key_padding_mask));
  return (*norm2_)(x + feed_forward_block(x));
}

Value TransformerEncoderLayer::forward_args(const Args& args) {
  return bind_forward(args, {"src", "src_mask", "src_key_padding_mask"},
                      [this](const Tensor& src, std::optional<Tensor> mask, std::optional<Tensor> padding) {
                        return forward(src, mask.value_or(Tensor()), padding.value_or(Tensor()));
                      });
}

}  // namespace strider::nn
