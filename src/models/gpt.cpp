#include "strider/models/gpt.h"

#include <cmath>

#include "strider/autograd/functions.h"
#include "strider/autograd/grad_mode.h"
#include "strider/nn/functional.h"
#include "strider/nn/init.h"
#include "strider/ops/factory.h"

namespace strider::models {

namespace F = nn::functional;

CausalSelfAttention::CausalSelfAttention(const GPTConfig& c) : Module("CausalSelfAttention"), c_(c) {
  STRIDER_CHECK(c.n_head > 0 && c.n_embd > 0, "GPT", "n_head (", c.n_head, ") and n_embd (", c.n_embd,
                ") must be positive");
  STRIDER_CHECK(c.n_embd % c.n_head == 0, "GPT", "n_embd (", c.n_embd, ") must be divisible by n_head (", c.n_head, ")");
  qkv_ = register_module("c_attn", std::make_shared<nn::Linear>(c.n_embd, 3 * c.n_embd));
  proj_ = register_module("c_proj", std::make_shared<nn::Linear>(c.n_embd, c.n_embd));
}

Tensor CausalSelfAttention::forward(const Tensor& x) {
  const int64_t B = x.sizes()[0], T = x.sizes()[1], C = x.sizes()[2], H = c_.n_head, D = C / H;
  std::vector<Tensor> qkv = split((*qkv_)(x), C, 2);  // [B, T, C] each
  auto heads = [&](const Tensor& t) { return t.reshape({B, T, H, D}).transpose(1, 2); };  // [B, H, T, D]
  // Without dropout this is the fused kernel; its output is already in [B, T, H, D] order.
  Tensor y = F::scaled_dot_product_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), Tensor(),
                                             is_training() ? c_.dropout : 0.0, /*is_causal=*/true);
  y = y.transpose(1, 2).reshape({B, T, C});
  return F::dropout((*proj_)(y), c_.dropout, is_training());
}

Block::Block(const GPTConfig& c) : Module("Block") {
  ln1_ = register_module("ln_1", std::make_shared<nn::LayerNorm>(DimVector{c.n_embd}));
  attn_ = register_module("attn", std::make_shared<CausalSelfAttention>(c));
  ln2_ = register_module("ln_2", std::make_shared<nn::LayerNorm>(DimVector{c.n_embd}));
  fc_ = register_module("c_fc", std::make_shared<nn::Linear>(c.n_embd, 4 * c.n_embd));
  proj_ = register_module("c_proj", std::make_shared<nn::Linear>(4 * c.n_embd, c.n_embd));
  drop_ = register_module("dropout", std::make_shared<nn::Dropout>(c.dropout));
}

Tensor Block::forward(const Tensor& x) {
  Tensor y = x + (*attn_)((*ln1_)(x));
  return y + (*drop_)((*proj_)(gelu((*fc_)((*ln2_)(y)))));
}

GPT::GPT(GPTConfig c) : Module("GPT"), c_(c) {
  tok_ = register_module("wte", std::make_shared<nn::Embedding>(c.vocab_size, c.n_embd));
  pos_ = register_module("wpe", std::make_shared<nn::Embedding>(c.block_size, c.n_embd));
  drop_ = register_module("drop", std::make_shared<nn::Dropout>(c.dropout));
  auto h = std::make_shared<nn::ModuleList>();
  for (int64_t i = 0; i < c.n_layer; ++i) {
    auto b = std::make_shared<Block>(c);
    h->push_back(b);
    blocks_.push_back(b);
  }
  register_module("h", h);
  ln_f_ = register_module("ln_f", std::make_shared<nn::LayerNorm>(DimVector{c.n_embd}));
  head_ = register_module("lm_head", std::make_shared<nn::Linear>(c.n_embd, c.vocab_size, false));
  // minGPT's init: N(0, 0.02) weights, zero biases, residual projections scaled by 1/sqrt(2 n_layer).
  const double proj_std = 0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer));
  apply([&](nn::Module& m) {
    if (m.type_name() == "Linear" || m.type_name() == "Embedding") nn::init::normal_(m.param("weight"), 0.0, 0.02);
    if (m.type_name() == "Linear" && m.has_param("bias")) nn::init::zeros_(m.param("bias"));
  });
  for (auto& b : blocks_)
    for (auto& [name, p] : b->named_parameters())
      if (name.size() >= 13 && name.substr(name.size() - 13) == "c_proj.weight") nn::init::normal_(p, 0.0, proj_std);
}

Tensor GPT::forward(const Tensor& idx) {
  STRIDER_CHECK(idx.dim() == 2 && idx.dtype() == kLong, "GPT", "expected int64 token ids [B, T], got ", idx.sizes(),
                " ", idx.dtype());
  const int64_t T = idx.sizes()[1];
  STRIDER_CHECK(T <= c_.block_size, "GPT", "sequence length ", T, " exceeds block_size ", c_.block_size);
  Tensor pos = arange(T).reshape({1, T});
  Tensor x = (*drop_)((*tok_)(idx) + (*pos_)(pos));
  for (auto& b : blocks_) x = (*b)(x);
  return (*head_)((*ln_f_)(x));
}

}  // namespace strider::models
