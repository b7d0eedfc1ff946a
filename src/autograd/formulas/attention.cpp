// Differentiable fused attention: the backward recomputes probabilities from the saved
// log-sum-exp instead of keeping the [L, S] matrix.
#include "autograd/formulas/grad_utils.h"
#include "strider/autograd/functions.h"
#include "strider/ops/attention.h"

namespace strider {

using autograd::Node;
using autograd::record;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal) {
  ops::AttentionResult r = ops::attention_forward(q, k, v, scale, causal);
  if (!autograd::any_requires_grad({&q, &k, &v})) return r.out;
  SavedTensor sq(q), sk(k), sv(v), so(r.out), sl(r.lse);
  return record("ScaledDotProductAttentionBackward", {&q, &k, &v}, r.out, [=](const Grads& g, const Node&) -> Grads {
    constexpr const char* op = "scaled_dot_product_attention";
    ops::AttentionGrads d = ops::attention_backward(g[0], sq.unpack(op), sk.unpack(op), sv.unpack(op),
                                                    so.unpack(op), sl.unpack(op), scale, causal);
    return {d.dq, d.dk, d.dv};
  });
}

}  // namespace strider
