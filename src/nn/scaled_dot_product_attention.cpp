// F.scaled_dot_product_attention: the fused kernel where it applies, PyTorch's composite (its
// math reference) everywhere else.
#include <cmath>

#include "strider/autograd/grad_mode.h"
#include "strider/nn/functional.h"
#include "strider/ops/factory.h"

namespace strider::nn::functional {
namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

// [L, S] bool, true where key j comes after query i.
Tensor future_keys(int64_t L, int64_t S) {
  autograd::NoGradGuard g;
  return gt(arange(S).reshape({1, S}) - arange(L).reshape({L, 1}), 0);
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
                                    double dropout_p, bool is_causal, std::optional<double> scale, Generator* gen) {
  STRIDER_CHECK(q.defined() && k.defined() && v.defined(), kOp, "query, key and value are required");
  STRIDER_CHECK(q.dim() >= 2 && k.dim() == q.dim() && v.dim() == q.dim(), kOp, "expected query [..., L, E], key "
                "[..., S, E] and value [..., S, Ev] of one rank (at least 2), got ", q.sizes(), ", ", k.sizes(),
                " and ", v.sizes());
  const int64_t L = q.sizes()[q.dim() - 2], E = q.sizes()[q.dim() - 1], S = k.sizes()[k.dim() - 2];
  STRIDER_CHECK(k.sizes()[k.dim() - 1] == E && v.sizes()[v.dim() - 2] == S, kOp, "key must be [..., S, ", E,
                "] and value [..., S, Ev] with the key's S; got query ", q.sizes(), ", key ", k.sizes(), ", value ",
                v.sizes());
  STRIDER_CHECK(dropout_p >= 0 && dropout_p < 1, kOp, "dropout_p must be in [0, 1), got ", dropout_p);
  STRIDER_CHECK(!(is_causal && attn_mask.defined()), kOp, "pass either attn_mask or is_causal, not both");
  STRIDER_CHECK(!attn_mask.defined() || attn_mask.dtype() == kBool || attn_mask.dtype() == q.dtype(), kOp,
                "attn_mask must be bool (true: take part) or the query's dtype ", q.dtype(), ", got ",
                attn_mask.dtype());
  const double s = scale.value_or(E > 0 ? 1.0 / std::sqrt(static_cast<double>(E)) : 1.0);
  STRIDER_CHECK(std::isfinite(s), kOp, "scale must be finite, got ", s);
  const bool fusable = q.dim() == 4 && !attn_mask.defined() && dropout_p == 0 && v.sizes()[3] == E &&
                       k.sizes()[0] == q.sizes()[0] && v.sizes()[0] == q.sizes()[0] && k.sizes()[1] == q.sizes()[1] &&
                       v.sizes()[1] == q.sizes()[1];
  if (fusable) return fused_attention(q, k, v, s, is_causal);
  Tensor scores = matmul(q, k.transpose(-2, -1)) * s;
  if (is_causal) scores = masked_fill(scores, future_keys(L, S), -INFINITY);
  if (attn_mask.defined())
    scores = attn_mask.dtype() == kBool ? masked_fill(scores, logical_not(attn_mask), -INFINITY) : scores + attn_mask;
  Tensor probs = softmax(scores, -1);
  if (dropout_p > 0) probs = dropout(probs, dropout_p, true, gen);
  return matmul(probs, v);
}

}  // namespace strider::nn::functional
