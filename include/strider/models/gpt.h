#pragma once
// A minGPT-style decoder: token + position embeddings, pre-norm blocks of causal multi-head
// self-attention and a GELU MLP, a final layer norm and a linear head over the vocabulary.
#include <memory>

#include "strider/nn/layers.h"

namespace strider::models {

struct GPTConfig {
  int64_t vocab_size = 256;
  int64_t block_size = 64;  // maximum sequence length
  int64_t n_layer = 2, n_head = 2, n_embd = 64;
  double dropout = 0.0;
};

class CausalSelfAttention : public nn::Module {
 public:
  explicit CausalSelfAttention(const GPTConfig& c);
  Tensor forward(const Tensor& x) override;  // [B, T, C] -> [B, T, C]

 private:
  GPTConfig c_;
  std::shared_ptr<nn::Module> qkv_, proj_;
};

class Block : public nn::Module {
 public:
  explicit Block(const GPTConfig& c);
  Tensor forward(const Tensor& x) override;

 private:
  std::shared_ptr<nn::Module> ln1_, attn_, ln2_, fc_, proj_, drop_;
};

class GPT : public nn::Module {
 public:
  explicit GPT(GPTConfig c);
  // int64 token ids [B, T] -> logits [B, T, vocab].
  Tensor forward(const Tensor& idx) override;
  const GPTConfig& config() const { return c_; }

 private:
  GPTConfig c_;
  std::shared_ptr<nn::Module> tok_, pos_, drop_, ln_f_, head_;
  std::vector<std::shared_ptr<nn::Module>> blocks_;
};

}  // namespace strider::models
