#pragma once
// Fused scaled dot-product attention (kernels/attention.h): softmax(scale * q k^T) v over
// queries [B, H, L, D] and keys and values [B, H, S, D] of one floating dtype and any strides,
// optionally causal (query i sees keys 0..i), without the [L, S] score matrix.
//
// The output [B, H, L, D] lives in [B, L, H, D] order, so out.transpose(1, 2) reshaped to
// [B, L, H * D] (the heads concatenated back) is a view; gradients use the same order.
#include "strider/core/tensor.h"

namespace strider::ops {

struct AttentionResult {
  Tensor out;
  Tensor lse;  // [B, H, L]: log-sum-exp of each query row's scaled scores (float32; float64 for float64)
};
AttentionResult attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal);

struct AttentionGrads {
  Tensor dq, dk, dv;
};
AttentionGrads attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& out, const Tensor& lse, double scale, bool causal);

}  // namespace strider::ops
