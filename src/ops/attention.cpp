#include "strider/ops/attention.h"

#include <cmath>

#include "core/make_tensor.h"
#include "kernels/attention.h"
#include "ops/kernel_dispatch.h"
#include "strider/core/layout.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"
#include "strider/ops/pointwise.h"
#include "strider/ops/view.h"

namespace strider::ops {
namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

void check_operands(const Tensor& q, const Tensor& k, const Tensor& v, double scale) {
  STRIDER_CHECK(q.defined() && k.defined() && v.defined(), kOp, "query, key and value are required");
  STRIDER_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, kOp, "expected 4-d query [B, H, L, D], key and value "
                "[B, H, S, D], got ", q.sizes(), ", ", k.sizes(), " and ", v.sizes());
  STRIDER_CHECK(is_floating_point(q.dtype()) && k.dtype() == q.dtype() && v.dtype() == q.dtype(), kOp,
                "query, key and value must share one floating dtype, got ", q.dtype(), ", ", k.dtype(), " and ",
                v.dtype());
  const IntArrayRef qs = q.sizes(), ks = k.sizes(), vs = v.sizes();
  STRIDER_CHECK(ks[0] == qs[0] && vs[0] == qs[0] && ks[1] == qs[1] && vs[1] == qs[1], kOp,
                "batch and head sizes must match: query ", qs, ", key ", ks, ", value ", vs);
  STRIDER_CHECK(ks[3] == qs[3] && vs[3] == qs[3] && vs[2] == ks[2], kOp, "expected key and value [B, H, S, ", qs[3],
                "] for query ", qs, ", got key ", ks, " and value ", vs,
                " (a value head size other than the query's takes the composite path)");
  STRIDER_CHECK(std::isfinite(scale), kOp, "scale must be finite, got ", scale);
}

// [B, H, L, D] sizes over [B, L, H, D] memory.
Tensor heads_interleaved(IntArrayRef s, ScalarType dtype) {
  const int64_t B = s[0], H = s[1], L = s[2], D = s[3];
  return make_tensor({B, H, L, D}, {L * H * D, D, H * D, 1}, dtype);
}

// The blocked kernel reads rows of unit stride; anything else is copied once.
Tensor unit_rows(const Tensor& t) { return t.sizes()[3] <= 1 || t.strides()[3] == 1 ? t : contiguous(t); }

ScalarType lse_dtype(ScalarType t) { return t == kDouble ? kDouble : kFloat; }

}  // namespace

AttentionResult attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal) {
  check_operands(q, k, v, scale);
  AttentionResult r{heads_interleaved(q.sizes(), q.dtype()),
                    make_tensor({q.sizes()[0], q.sizes()[1], q.sizes()[2]},
                                layout::contiguous_strides({q.sizes()[0], q.sizes()[1], q.sizes()[2]}),
                                lse_dtype(q.dtype()))};
  if (r.out.numel() == 0) return r;
  if (k.sizes()[2] == 0) {  // no keys: the empty sum (PyTorch's composite gives zeros too)
    fill_(r.out, 0);
    fill_(r.lse, -INFINITY);
    return r;
  }
  kernels::attention_forward({r.out, r.lse, unit_rows(q), unit_rows(k), unit_rows(v), scale, causal}, dispatch(kOp));
  return r;
}

AttentionGrads attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& out, const Tensor& lse, double scale, bool causal) {
  check_operands(q, k, v, scale);
  STRIDER_CHECK(dout.sizes() == q.sizes() && out.sizes() == q.sizes() && dout.dtype() == q.dtype() &&
                    out.dtype() == q.dtype(),
                kOp, "the output and its gradient must be ", q.sizes(), " ", q.dtype(), ", got ", out.sizes(), " ",
                out.dtype(), " and ", dout.sizes(), " ", dout.dtype());
  STRIDER_CHECK(lse.dim() == 3 && lse.sizes() == IntArrayRef({q.sizes()[0], q.sizes()[1], q.sizes()[2]}) && lse.dtype() == lse_dtype(q.dtype()) &&
                    lse.is_contiguous(),
                kOp, "expected the forward's log-sum-exp, contiguous [B, H, L] ", lse_dtype(q.dtype()), ", got ",
                lse.sizes(), " ", lse.dtype());
  AttentionGrads g{heads_interleaved(q.sizes(), q.dtype()), heads_interleaved(k.sizes(), k.dtype()),
                   heads_interleaved(v.sizes(), v.dtype())};
  if (q.numel() == 0 || k.numel() == 0) {
    for (const Tensor* t : {&g.dq, &g.dk, &g.dv}) fill_(*t, 0);
    return g;
  }
  kernels::attention_backward({g.dq, g.dk, g.dv, unit_rows(dout), unit_rows(q), unit_rows(k), unit_rows(v),
                               unit_rows(out), lse, scale, causal},
                              dispatch(kOp));
  return g;
}

}  // namespace strider::ops
