#include "strider/nn/attention.h"

#include <cmath>

#include "strider/autograd/functions.h"
#include "strider/autograd/grad_mode.h"
#include "strider/nn/forward_binding.h"
#include "strider/nn/functional.h"
#include "strider/nn/init.h"
#include "strider/nn/layers.h"
#include "strider/ops/factory.h"

namespace strider::nn {

namespace F = functional;

namespace {

constexpr const char* kOp = "MultiheadAttention";

// Appends one zero column along the last dim (the extra key of add_bias_kv / add_zero_attn).
Tensor pad_key_column(const Tensor& mask) {
  if (!mask.defined()) return mask;
  DimVector sizes = mask.sizes().vec();
  sizes.back() = 1;
  return cat({mask, zeros(sizes, mask.dtype())}, -1);
}

// Applies a bool mask (true: not allowed) or adds a floating one; `mask` broadcasts to scores.
Tensor apply_mask(const Tensor& scores, const Tensor& mask) {
  if (!mask.defined()) return scores;
  if (mask.dtype() == kBool) return masked_fill(scores, mask, -INFINITY);
  return scores + mask.to(scores.dtype());
}

void check_mask_dtype(const Tensor& mask, const char* name) {
  STRIDER_CHECK(!mask.defined() || mask.dtype() == kBool || is_floating_point(mask.dtype()), kOp, name,
                " must be bool (true: masked) or floating (added to the scores), got ", mask.dtype());
}

}  // namespace

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads, MultiheadAttentionOptions options)
    : Module(kOp), embed_dim_(embed_dim), num_heads_(num_heads), options_(options) {
  STRIDER_CHECK(embed_dim > 0 && num_heads > 0 && embed_dim % num_heads == 0, kOp, "embed_dim (", embed_dim,
                ") must be a positive multiple of num_heads (", num_heads, ")");
  STRIDER_CHECK(options.dropout >= 0 && options.dropout < 1, kOp, "dropout must be in [0, 1), got ", options.dropout);
  STRIDER_CHECK(options.kdim >= 0 && options.vdim >= 0, kOp, "kdim and vdim must be positive (or 0 for embed_dim), got ",
                options.kdim, " and ", options.vdim);
  head_dim_ = embed_dim / num_heads;
  if (options_.kdim == 0) options_.kdim = embed_dim;
  if (options_.vdim == 0) options_.vdim = embed_dim;
  packed_ = options_.kdim == embed_dim && options_.vdim == embed_dim;
  const int64_t E = embed_dim;
  if (packed_) {
    register_parameter("in_proj_weight", empty({3 * E, E}));
  } else {
    register_parameter("q_proj_weight", empty({E, E}));
    register_parameter("k_proj_weight", empty({E, options_.kdim}));
    register_parameter("v_proj_weight", empty({E, options_.vdim}));
  }
  if (options_.bias) register_parameter("in_proj_bias", empty({3 * E}));
  if (options_.add_bias_kv) {
    register_parameter("bias_k", empty({1, 1, E}));
    register_parameter("bias_v", empty({1, 1, E}));
  }
  out_proj_ = register_module("out_proj", std::make_shared<Linear>(E, E, options_.bias));
  reset_parameters();
}

void MultiheadAttention::reset_parameters(Generator* gen) {
  if (packed_) {
    init::xavier_uniform_(param("in_proj_weight"), 1.0, gen);
  } else {
    for (const char* n : {"q_proj_weight", "k_proj_weight", "v_proj_weight"}) init::xavier_uniform_(param(n), 1.0, gen);
  }
  static_cast<Linear&>(*out_proj_).reset_parameters(gen);
  if (options_.bias) {
    init::zeros_(param("in_proj_bias"));
    init::zeros_(out_proj_->param("bias"));
  }
  if (options_.add_bias_kv) {
    init::xavier_normal_(param("bias_k"), 1.0, gen);
    init::xavier_normal_(param("bias_v"), 1.0, gen);
  }
}

namespace {

// Whether PyTorch 1.13 would answer this call from its fused inference kernel
// (torch._native_multi_head_attention; the conditions of nn.MultiheadAttention.forward): that
// kernel returns a contiguous [N, L, E], where the general path returns a transposed view.
bool pytorch_fused_path(const MultiheadAttention& m, bool packed, const Tensor& query, const Tensor& key,
                        const Tensor& value, const Tensor& attn_mask) {
  const MultiheadAttentionOptions& o = m.options();
  if (query.dim() != 3 || !query.is_same(key) || !key.is_same(value) || m.is_training() || !o.batch_first ||
      o.add_bias_kv || o.dropout != 0 || o.add_zero_attn || !packed || attn_mask.defined() || m.num_heads() % 2 == 1)
    return false;
  if (!autograd::GradMode::is_enabled()) return true;
  if (query.requires_grad()) return false;
  for (const auto& [name, p] : m.named_parameters())
    if (p.requires_grad()) return false;
  return true;
}

// The three inputs batch-first ([N, L, E]; an unbatched input is one batch and ignores
// batch_first, as in PyTorch), with their shapes checked against the module's sizes.
struct BatchFirst {
  Tensor q, k, v;
  int64_t N, L, S;
  bool batched;
};

BatchFirst batch_first_inputs(const Tensor& query, const Tensor& key, const Tensor& value, int64_t E,
                              const MultiheadAttentionOptions& o) {
  STRIDER_CHECK(query.defined() && key.defined() && value.defined(), kOp, "query, key and value are required");
  STRIDER_CHECK((query.dim() == 3 || query.dim() == 2) && key.dim() == query.dim() && value.dim() == query.dim(), kOp,
                "query, key and value must all be 3-d (batched) or all 2-d (unbatched), got ", query.sizes(), ", ",
                key.sizes(), " and ", value.sizes());
  STRIDER_CHECK(is_floating_point(query.dtype()) && key.dtype() == query.dtype() && value.dtype() == query.dtype(),
                kOp, "query, key and value must share one floating dtype, got ", query.dtype(), ", ", key.dtype(),
                " and ", value.dtype());
  const bool batched = query.dim() == 3;
  auto batch_first = [&](const Tensor& t) {
    if (!batched) return t.unsqueeze(0);
    return o.batch_first ? t : t.transpose(0, 1);
  };
  BatchFirst in{batch_first(query), batch_first(key), batch_first(value), 0, 0, 0, batched};
  in.N = in.q.sizes()[0];
  in.L = in.q.sizes()[1];
  in.S = in.k.sizes()[1];
  STRIDER_CHECK(in.q.sizes()[2] == E && in.k.sizes()[2] == o.kdim && in.v.sizes()[2] == o.vdim, kOp,
                "expected query, key and value feature sizes ", E, ", ", o.kdim, " and ", o.vdim,
                " (embed_dim, kdim, vdim), got ", query.sizes(), ", ", key.sizes(), " and ", value.sizes());
  STRIDER_CHECK(in.k.sizes()[0] == in.N && in.v.sizes()[0] == in.N && in.v.sizes()[1] == in.S, kOp,
                "key and value must have the query's batch size and one sequence length, got query ", query.sizes(),
                ", key ", key.sizes(), " and value ", value.sizes(), o.batch_first ? " (batch_first)" : "");
  return in;
}

// key_padding_mask as [N, 1, 1, S]; attn_mask as [L, S] or [N, H, L, S]; each checked.
std::pair<Tensor, Tensor> shaped_masks(const Tensor& key_padding_mask, const Tensor& attn_mask, const BatchFirst& in,
                                       int64_t H) {
  check_mask_dtype(key_padding_mask, "key_padding_mask");
  check_mask_dtype(attn_mask, "attn_mask");
  const int64_t N = in.N, L = in.L, S = in.S;
  Tensor kpm = key_padding_mask;
  if (kpm.defined()) {
    STRIDER_CHECK(kpm.sizes() == (in.batched ? IntArrayRef({N, S}) : IntArrayRef({S})), kOp,
                  "key_padding_mask must be ", in.batched ? "[N, S] = " : "[S] = ",
                  in.batched ? detail::str(DimVector{N, S}) : detail::str(DimVector{S}), ", got ", kpm.sizes());
    kpm = kpm.reshape({N, 1, 1, S});
  }
  Tensor am = attn_mask;
  if (am.defined()) {
    const bool two_d = am.dim() == 2 && am.sizes() == IntArrayRef({L, S});
    const bool three_d = am.dim() == 3 && am.sizes() == IntArrayRef({N * H, L, S});
    STRIDER_CHECK(two_d || three_d, kOp, "attn_mask must be [L, S] = [", L, ", ", S, "] or [N * num_heads, L, S] = [",
                  N * H, ", ", L, ", ", S, "], got ", am.sizes());
    if (three_d) am = am.reshape({N, H, L, S});
  }
  return {kpm, am};
}

}  // namespace

std::pair<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                      const Tensor& key_padding_mask, bool need_weights,
                                                      const Tensor& attn_mask, bool average_attn_weights) {
  const int64_t E = embed_dim_, H = num_heads_, D = head_dim_;
  BatchFirst in = batch_first_inputs(query, key, value, E, options_);
  auto [kpm, am] = shaped_masks(key_padding_mask, attn_mask, in, H);
  const int64_t N = in.N, L = in.L;
  const bool batched = in.batched;
  Tensor q = in.q, k = in.k, v = in.v;
  // The output's layout is PyTorch's: its general path computes [L, N, E] rows (batch_first
  // returns the transposed view, strides (E, N*E, 1)); its fused inference path, [N, L, E].
  const bool rows_batch_first = pytorch_fused_path(*this, packed_, query, key, value, attn_mask);
  auto merge_heads = [&](const Tensor& o) {  // [N, H, L, D] -> the rows out_proj maps
    return rows_batch_first ? o.transpose(1, 2).reshape({N, L, E}) : o.permute({2, 0, 1, 3}).reshape({L, N, E});
  };
  auto finish = [&](const Tensor& rows) {
    if (!batched) return rows.reshape({L, E});
    return options_.batch_first && !rows_batch_first ? rows.transpose(0, 1) : rows;
  };

  // In-projections: rows [0, E), [E, 2E), [2E, 3E) of the packed weight and bias.
  auto project = [&](const Tensor& x, int64_t i, const char* separate) {
    Tensor w = packed_ ? param("in_proj_weight").narrow(0, i * E, E) : param(separate);
    Tensor b = options_.bias ? param("in_proj_bias").narrow(0, i * E, E) : Tensor();
    return linear(x, w, b);
  };
  q = project(q, 0, "q_proj_weight");
  k = project(k, 1, "k_proj_weight");
  v = project(v, 2, "v_proj_weight");
  if (options_.add_bias_kv) {
    k = cat({k, param("bias_k").expand({N, 1, E})}, 1);
    v = cat({v, param("bias_v").expand({N, 1, E})}, 1);
    kpm = pad_key_column(kpm);
    am = pad_key_column(am);
  }
  auto heads = [&](const Tensor& t) { return t.reshape({N, t.sizes()[1], H, D}).transpose(1, 2); };  // [N, H, *, D]
  q = heads(q);
  k = heads(k);
  v = heads(v);
  if (options_.add_zero_attn) {
    k = cat({k, zeros({N, H, 1, D}, k.dtype())}, 2);
    v = cat({v, zeros({N, H, 1, D}, v.dtype())}, 2);
    kpm = pad_key_column(kpm);
    am = pad_key_column(am);
  }
  if (!need_weights && !am.defined() && !kpm.defined() && (options_.dropout == 0 || !is_training())) {
    // Nobody sees the weights: the fused kernel never forms them.
    Tensor fused = merge_heads(F::scaled_dot_product_attention(q, k, v));
    return {finish((*out_proj_)(fused)), Tensor()};
  }
  q = q / std::sqrt(static_cast<double>(D));
  Tensor scores = matmul(q, k.transpose(-2, -1));  // [N, H, L, S']
  scores = apply_mask(apply_mask(scores, am), kpm);
  Tensor attn = softmax(scores, -1);
  if (options_.dropout > 0) attn = F::dropout(attn, options_.dropout, is_training());
  Tensor out = finish((*out_proj_)(merge_heads(matmul(attn, v))));
  Tensor weights;
  if (need_weights) {
    weights = average_attn_weights ? sum(attn, {1}) / static_cast<double>(H) : attn;
    if (!batched) weights = weights.reshape(average_attn_weights ? IntArrayRef({L, attn.sizes()[3]})
                                                                  : IntArrayRef({H, L, attn.sizes()[3]}));
  }
  return {out, weights};
}

Value MultiheadAttention::forward_args(const Args& args) {
  return bind_forward(args,
                      {"query", "key", "value", "key_padding_mask", "need_weights", "attn_mask", "average_attn_weights"},
                      [this](const Tensor& q, const Tensor& k, const Tensor& v, std::optional<Tensor> kpm,
                             std::optional<bool> need_weights, std::optional<Tensor> attn_mask,
                             std::optional<bool> average) {
                        auto [out, w] = forward(q, k, v, kpm.value_or(Tensor()), need_weights.value_or(true),
                                                attn_mask.value_or(Tensor()), average.value_or(true));
                        return Value::list({out, w.defined() ? Value(w) : Value()});
                      });
}

}  // namespace strider::nn
