// Differentiable batch norm, pooling and matrix products.
#include "autograd/formulas/grad_utils.h"
#include "strider/autograd/functions.h"
#include "strider/ops/index.h"
#include "strider/ops/linear.h"
#include "strider/ops/norm.h"
#include "strider/ops/pool.h"

namespace strider {

using autograd::InputGeometry;
using autograd::Node;
using autograd::record;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

namespace {

// batch_norm, with a ReLU after it fused when asked, and a residual added before the ReLU.
Tensor batch_norm_fused(const Tensor& input, const Tensor& residual, const Tensor& running_mean,
                        const Tensor& running_var, const Tensor& weight, const Tensor& bias, bool training,
                        double momentum, double eps, bool relu) {
  ops::BatchNormResult r;
  {
    // Running statistics are buffers, not part of the graph.
    autograd::NoGradGuard no_grad;
    r = ops::batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, relu, residual);
  }
  if (!autograd::any_requires_grad({&input, &weight, &bias, &residual})) return r.out;
  SavedTensor si(input), sw(weight), sm(r.mean), sv(r.var);
  if (!relu) {  // callers pass a residual only with the ReLU
    return record("BatchNormBackward", {&input, &weight, &bias}, r.out, [=](const Grads& g, const Node& n) -> Grads {
      auto [gi, gw, gb] = ops::batch_norm_backward(g[0], si.unpack("batch_norm"), sw.unpack("batch_norm"),
                                                   sm.unpack("batch_norm"), sv.unpack("batch_norm"), training, eps,
                                                   {n.needs_input_grad(0), n.needs_input_grad(1), n.needs_input_grad(2)});
      return {gi, gw, gb};
    });
  }
  // The residual is kept only where the backward recomputes the ReLU's mask from it; elsewhere
  // the mask comes from the output, which the separate ReLU would have kept as well.
  SavedTensor sb(bias), sr(r.relu_mask_from_input ? residual : Tensor()), so(r.out);
  const char* name = residual.defined() ? "BatchNormAddReluBackward" : "BatchNormReluBackward";
  const ops::BatchNormResult how{.computed_by = r.computed_by, .relu = r.relu, .residual_added = r.residual_added,
                                 .relu_mask_from_input = r.relu_mask_from_input};
  return record(name, {&input, &weight, &bias, &residual}, r.out, [=](const Grads& g, const Node& n) -> Grads {
    ops::BatchNormResult forward = how;
    forward.out = so.unpack(name);
    forward.mean = sm.unpack(name);
    forward.var = sv.unpack(name);
    ops::BatchNormReluGrads d = ops::batch_norm_relu_backward(
        g[0], si.unpack(name), sw.unpack(name), sb.unpack(name), sr.unpack(name), forward, training, eps,
        {n.needs_input_grad(0), n.needs_input_grad(1), n.needs_input_grad(2), n.needs_input_grad(3)});
    return {d.input, d.weight, d.bias, d.residual};
  });
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps) {
  return batch_norm_fused(input, Tensor(), running_mean, running_var, weight, bias, training, momentum, eps, false);
}

Tensor batch_norm_relu(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps) {
  return batch_norm_fused(input, Tensor(), running_mean, running_var, weight, bias, training, momentum, eps, true);
}

Tensor batch_norm_add_relu(const Tensor& input, const Tensor& residual, const Tensor& running_mean,
                           const Tensor& running_var, const Tensor& weight, const Tensor& bias, bool training,
                           double momentum, double eps) {
  STRIDER_CHECK(residual.defined(), "batch_norm_add_relu", "the residual is undefined; use batch_norm_relu");
  return batch_norm_fused(input, residual, running_mean, running_var, weight, bias, training, momentum, eps, true);
}

Tensor layer_norm_trailing(const Tensor& input, int64_t n, const Tensor& weight, const Tensor& bias, double eps) {
  ops::LayerNormResult r = ops::layer_norm(input, n, weight, bias, eps);
  if (!autograd::any_requires_grad({&input, &weight, &bias})) return r.out;
  SavedTensor si(input), sw(weight), sm(r.mean), sv(r.var);
  return record("LayerNormBackward", {&input, &weight, &bias}, r.out, [=](const Grads& g, const Node& nd) -> Grads {
    auto [gi, gw, gb] = ops::layer_norm_backward(g[0], si.unpack("layer_norm"), n, sw.unpack("layer_norm"),
                                                 sm.unpack("layer_norm"), sv.unpack("layer_norm"), eps,
                                                 {nd.needs_input_grad(0), nd.needs_input_grad(1), nd.needs_input_grad(2)});
    return {gi, gw, gb};
  });
}

namespace {

ops::PoolArgs pool_args(IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                        bool ceil_mode) {
  ops::PoolArgs a;
  a.kernel = kernel.vec();
  a.stride = stride.vec();
  a.padding = padding.vec();
  a.dilation = dilation.vec();
  a.ceil_mode = ceil_mode;
  return a;
}

std::pair<Tensor, Tensor> pool(const char* name, const Tensor& input, int64_t nsp, const ops::PoolArgs& a,
                               bool is_max, bool with_indices) {
  auto r = std::make_shared<ops::PoolResult>(is_max ? ops::max_pool(input, nsp, a, with_indices)
                                                    : ops::avg_pool(input, nsp, a));
  Tensor out = r->out, indices = r->indices;
  if (!autograd::any_requires_grad({&input})) return {out, indices};
  SavedTensor si(input);
  r->out = Tensor();  // keep only what backward needs
  out = record(name, {&input}, out, [=](const Grads& g, const Node&) -> Grads {
    return {ops::pool_backward(g[0], si.unpack(name), nsp, a, *r, is_max)};
  });
  return {out, indices};
}

Tensor adaptive(const char* name, const Tensor& input, IntArrayRef output_size, bool is_max) {
  auto r = std::make_shared<ops::PoolResult>(ops::adaptive_pool(input, output_size, is_max));
  Tensor out = r->out;
  if (!autograd::any_requires_grad({&input})) return out;
  SavedTensor si(input);
  DimVector size = output_size.vec();
  r->out = Tensor();
  return record(name, {&input}, out, [=](const Grads& g, const Node&) -> Grads {
    return {ops::adaptive_pool_backward(g[0], si.unpack(name), size, *r, is_max)};
  });
}

}  // namespace

Tensor max_pool2d(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p, IntArrayRef d, bool ceil) {
  return pool("MaxPool2dBackward", input, 2, pool_args(k, s, p, d, ceil), true, false).first;
}
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                                  IntArrayRef d, bool ceil) {
  return pool("MaxPool2dBackward", input, 2, pool_args(k, s, p, d, ceil), true, true);
}
Tensor max_pool3d(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p, IntArrayRef d, bool ceil) {
  return pool("MaxPool3dBackward", input, 3, pool_args(k, s, p, d, ceil), true, false).first;
}
Tensor avg_pool2d(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil, bool include_pad,
                  std::optional<int64_t> divisor) {
  ops::PoolArgs a = pool_args(k, s, p, {1}, ceil);
  a.count_include_pad = include_pad;
  a.divisor_override = divisor;
  return pool("AvgPool2dBackward", input, 2, a, false, false).first;
}
Tensor avg_pool3d(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil, bool include_pad,
                  std::optional<int64_t> divisor) {
  ops::PoolArgs a = pool_args(k, s, p, {1}, ceil);
  a.count_include_pad = include_pad;
  a.divisor_override = divisor;
  return pool("AvgPool3dBackward", input, 3, a, false, false).first;
}
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef o) { return adaptive("AdaptiveAvgPool2dBackward", input, o, false); }
Tensor adaptive_avg_pool3d(const Tensor& input, IntArrayRef o) { return adaptive("AdaptiveAvgPool3dBackward", input, o, false); }
Tensor adaptive_max_pool2d(const Tensor& input, IntArrayRef o) { return adaptive("AdaptiveMaxPool2dBackward", input, o, true); }
Tensor adaptive_max_pool3d(const Tensor& input, IntArrayRef o) { return adaptive("AdaptiveMaxPool3dBackward", input, o, true); }

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  Tensor y = ops::linear(x, weight, bias);
  if (!autograd::any_requires_grad({&x, &weight, &bias})) return y;
  SavedTensor sx(x), sw(weight);
  InputGeometry gx(x);
  const bool has_bias = bias.defined();
  return record("LinearBackward", {&x, &weight, &bias}, y, [=](const Grads& g, const Node& n) -> Grads {
    const int64_t out = g[0].sizes()[g[0].dim() - 1];
    const int64_t rows = checked_numel(IntArrayRef(gx.sizes.data(), gx.sizes.size() - 1), "linear");
    Tensor g2 = ops::reshape(g[0], {rows, out});
    Tensor w = sw.unpack("linear");
    Tensor dx, dw, db;
    if (n.needs_input_grad(0)) dx = ops::reshape(ops::mm(g2, w), gx.sizes);
    if (n.needs_input_grad(1)) {
      Tensor x2 = ops::reshape(sx.unpack("linear"), {rows, w.sizes()[1]});
      dw = ops::mm(ops::t(g2), x2);
    }
    if (has_bias && n.needs_input_grad(2)) db = ops::sum(g2, {0});
    return {dx, dw, db};
  });
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  Tensor y = ops::matmul(a, b);
  if (!autograd::any_requires_grad({&a, &b})) return y;
  SavedTensor sa(a), sb(b);
  InputGeometry ga(a), gb(b);
  return record("MatmulBackward", {&a, &b}, y, [=](const Grads& g, const Node& n) -> Grads {
    Tensor A = sa.unpack("matmul"), B = sb.unpack("matmul");
    // Promote 1-d operands the way the forward did, then reduce broadcast batch dims.
    Tensor A2 = A.dim() == 1 ? ops::unsqueeze(A, 0) : A, B2 = B.dim() == 1 ? ops::unsqueeze(B, 1) : B;
    Tensor G = g[0];
    if (A.dim() == 1) G = ops::unsqueeze(G, G.dim() - (B.dim() == 1 ? 0 : 1));
    if (B.dim() == 1) G = ops::unsqueeze(G, G.dim());
    Tensor da, db;
    if (n.needs_input_grad(0)) da = autograd::reduce_to(ops::matmul(G, ops::transpose(B2, -1, -2)), A2.sizes(), ga.dtype);
    if (n.needs_input_grad(1)) db = autograd::reduce_to(ops::matmul(ops::transpose(A2, -1, -2), G), B2.sizes(), gb.dtype);
    if (da.defined()) da = ops::reshape(da, ga.sizes);
    if (db.defined()) db = ops::reshape(db, gb.sizes);
    return {da, db};
  });
}

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  Tensor out = ops::index_select(self, dim, index);
  if (!autograd::any_requires_grad({&self})) return out;
  SavedTensor si(index);
  InputGeometry gs(self);
  return record("IndexSelectBackward", {&self}, out, [=](const Grads& g, const Node&) -> Grads {
    return {ops::index_add_into(gs.sizes, dim, si.unpack("index_select"), g[0])};
  });
}

// mm and bmm do not broadcast (matmul does): their shapes are checked here, naming the op.
Tensor mm(const Tensor& a, const Tensor& b) {
  STRIDER_CHECK(a.dim() == 2 && b.dim() == 2, "mm", "expected 2-d tensors, got ", a.sizes(), " and ", b.sizes());
  STRIDER_CHECK(a.sizes()[1] == b.sizes()[0], "mm", "mat1 and mat2 shapes cannot be multiplied (", a.sizes(), " and ",
                b.sizes(), ")");
  return matmul(a, b);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  STRIDER_CHECK(a.dim() == 3 && b.dim() == 3, "bmm", "expected 3-d tensors, got ", a.sizes(), " and ", b.sizes());
  STRIDER_CHECK(a.sizes()[0] == b.sizes()[0] && a.sizes()[2] == b.sizes()[1], "bmm",
                "expected batch2 of size [", a.sizes()[0], ", ", a.sizes()[2], ", N] for batch1 ", a.sizes(), ", got ",
                b.sizes(), " (bmm does not broadcast; matmul does)");
  return matmul(a, b);
}

}  // namespace strider
