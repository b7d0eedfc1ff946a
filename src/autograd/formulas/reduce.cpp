// Differentiable reductions and softmax.
#include "autograd/formulas/grad_utils.h"
#include "strider/autograd/functions.h"
#include "strider/ops/softmax.h"

namespace strider {

using autograd::InputGeometry;
using autograd::Node;
using autograd::record;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

namespace {

// The reduced dims of an input of rank `dim` as a mask (empty list = all).
std::vector<bool> reduced_dims(IntArrayRef dims, int64_t dim) {
  std::vector<bool> mask(dim, dims.empty());
  for (int64_t d : dims) mask[layout::wrap_dim(d, dim, "reduce")] = true;
  return mask;
}

// Brings a reduction's gradient back to the keepdim shape (re-inserting squeezed dims).
Tensor unsqueeze_reduced(const Tensor& g, const std::vector<bool>& mask, bool keepdim) {
  if (keepdim) return g;
  Tensor r = g;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d]) r = ops::unsqueeze(r, static_cast<int64_t>(d));
  return r;
}

int64_t reduced_count(IntArrayRef sizes, const std::vector<bool>& mask) {
  int64_t n = 1;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d]) n *= sizes[d];
  return n;
}

}  // namespace

Tensor sum(const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  Tensor y = ops::sum(t, dims, keepdim, dtype);
  if (!autograd::any_requires_grad({&t})) return y;
  auto mask = reduced_dims(dims, t.dim());
  InputGeometry gi(t);
  return record("SumBackward", {&t}, y, [=](const Grads& g, const Node&) -> Grads {
    Tensor gk = unsqueeze_reduced(g[0], mask, keepdim);
    return {autograd::reduce_to(ops::expand(gk, gi.sizes), gi.sizes, gi.dtype)};
  });
}

Tensor mean(const Tensor& t, IntArrayRef dims, bool keepdim) {
  Tensor y = ops::mean(t, dims, keepdim);
  if (!autograd::any_requires_grad({&t})) return y;
  auto mask = reduced_dims(dims, t.dim());
  InputGeometry gi(t);
  const double n = static_cast<double>(reduced_count(t.sizes(), mask));
  return record("MeanBackward", {&t}, y, [=](const Grads& g, const Node&) -> Grads {
    Tensor gk = ops::div(unsqueeze_reduced(g[0], mask, keepdim), n);
    return {ops::expand(gk, gi.sizes)};
  });
}

Tensor prod(const Tensor& t, IntArrayRef dims, bool keepdim) {
  Tensor y = ops::prod(t, dims, keepdim);
  if (!autograd::any_requires_grad({&t})) return y;
  auto mask = reduced_dims(dims, t.dim());
  SavedTensor sx(t);
  InputGeometry gi(t);
  DimVector dv = dims.vec();
  return record("ProdBackward", {&t}, y, [=](const Grads& g, const Node&) -> Grads {
    // d prod / dx_i = product of the others: prod / x_i where x_i != 0; with one zero in the
    // slice, the product of the rest at that zero; with two or more, 0.
    Tensor x = sx.unpack("prod");
    Tensor is_zero = ops::eq(x, 0);
    Tensor x_nz = ops::where(is_zero, Scalar(1.0), x);
    Tensor p_nz = ops::prod(x_nz, dv, true);
    Tensor zeros = ops::sum(is_zero, dv, true);
    Tensor full = ops::div(p_nz, x_nz);  // == prod/x_i when no zeros
    Tensor with_zero = ops::where(ops::eq(zeros, 1), p_nz, Scalar(0.0));
    Tensor none_zero = ops::where(ops::eq(zeros, 0), full, Scalar(0.0));
    Tensor d = ops::where(is_zero, ops::expand(with_zero, gi.sizes), none_zero);
    return {ops::mul(d, ops::expand(unsqueeze_reduced(g[0], mask, keepdim), gi.sizes))};
  });
}

namespace {

// amax/amin/max()/min(): the gradient goes to every extremal element, split evenly among ties.
Tensor extremum_backward(const char* name, const Tensor& t, Tensor y, IntArrayRef dims, bool keepdim) {
  if (!autograd::any_requires_grad({&t})) return y;
  auto mask = reduced_dims(dims, t.dim());
  SavedTensor sx(t), sy(y);
  InputGeometry gi(t);
  DimVector dv = dims.vec();
  return record(name, {&t}, y, [=](const Grads& g, const Node&) -> Grads {
    Tensor yk = unsqueeze_reduced(sy.unpack(name), mask, keepdim);
    Tensor hit = ops::to(ops::eq(sx.unpack(name), yk), g[0].dtype());
    Tensor count = ops::sum(hit, dv, true);
    Tensor gk = ops::div(unsqueeze_reduced(g[0], mask, keepdim), count);
    return {ops::mul(hit, gk)};
  });
}

// max(dim)/min(dim): the gradient goes to the returned index.
std::pair<Tensor, Tensor> indexed_backward(const char* name, const Tensor& t,
                                           std::pair<Tensor, Tensor> r, int64_t dim, bool keepdim) {
  if (!autograd::any_requires_grad({&t})) return r;
  const int64_t d = t.dim() == 0 ? 0 : layout::wrap_dim(dim, t.dim(), name);
  SavedTensor si(r.second);
  InputGeometry gi(t);
  Tensor values = r.first;
  record(name, {&t}, {&values}, [=](const Grads& g, const Node&) -> Grads {
    if (gi.sizes.empty()) return {g[0]};
    Tensor idx = si.unpack(name);
    if (!keepdim) idx = ops::unsqueeze(idx, d);
    DimVector shape(gi.sizes.size(), 1);
    shape[d] = gi.sizes[d];
    Tensor positions = ops::reshape(arange(gi.sizes[d]), shape);
    Tensor hit = ops::eq(positions, idx);
    Tensor gk = keepdim ? g[0] : ops::unsqueeze(g[0], d);
    return {ops::where(hit, ops::expand(gk, gi.sizes), Scalar(0.0))};
  });
  return {values, r.second};
}

}  // namespace

Tensor amax(const Tensor& t, IntArrayRef dims, bool keepdim) {
  return extremum_backward("AmaxBackward", t, ops::amax(t, dims, keepdim), dims, keepdim);
}
Tensor amin(const Tensor& t, IntArrayRef dims, bool keepdim) {
  return extremum_backward("AminBackward", t, ops::amin(t, dims, keepdim), dims, keepdim);
}
Tensor max(const Tensor& t) { return extremum_backward("MaxBackward", t, ops::max(t), {}, false); }
Tensor min(const Tensor& t) { return extremum_backward("MinBackward", t, ops::min(t), {}, false); }
std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim) {
  return indexed_backward("MaxBackward", t, ops::max(t, dim, keepdim), dim, keepdim);
}
std::pair<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim) {
  return indexed_backward("MinBackward", t, ops::min(t, dim, keepdim), dim, keepdim);
}
Tensor argmax(const Tensor& t, std::optional<int64_t> dim, bool keepdim) { return ops::argmax(t, dim, keepdim); }
Tensor argmin(const Tensor& t, std::optional<int64_t> dim, bool keepdim) { return ops::argmin(t, dim, keepdim); }

Tensor var(const Tensor& t, IntArrayRef dims, int64_t correction, bool keepdim) {
  Tensor y = ops::var(t, dims, correction, keepdim);
  if (!autograd::any_requires_grad({&t})) return y;
  auto mask = reduced_dims(dims, t.dim());
  SavedTensor sx(t);
  const double n = static_cast<double>(reduced_count(t.sizes(), mask));
  DimVector dv = dims.vec();
  return record("VarBackward", {&t}, y, [=](const Grads& g, const Node&) -> Grads {
    Tensor x = sx.unpack("var");
    Tensor centered = ops::sub(x, ops::mean(x, dv, true));
    Tensor scale = ops::div(unsqueeze_reduced(g[0], mask, keepdim), (n - static_cast<double>(correction)) / 2.0);
    return {ops::mul(centered, scale)};
  });
}

Tensor softmax(const Tensor& t, int64_t dim) {
  Tensor y = ops::softmax(t, dim);
  if (!autograd::any_requires_grad({&t})) return y;
  SavedTensor sy(y);
  const int64_t d = t.dim() == 0 ? 0 : layout::wrap_dim(dim, t.dim(), "softmax");
  InputGeometry gi(t);
  return record("SoftmaxBackward", {&t}, y, [=](const Grads& g, const Node&) -> Grads {
    Tensor yy = sy.unpack("softmax");
    if (gi.sizes.empty()) return {ops::mul(g[0], 0.0)};
    Tensor dot = ops::sum(ops::mul(g[0], yy), {d}, true);
    return {ops::mul(yy, ops::sub(g[0], dot))};
  });
}

Tensor log_softmax(const Tensor& t, int64_t dim) {
  Tensor y = ops::log_softmax(t, dim);
  if (!autograd::any_requires_grad({&t})) return y;
  SavedTensor sy(y);
  const int64_t d = t.dim() == 0 ? 0 : layout::wrap_dim(dim, t.dim(), "log_softmax");
  InputGeometry gi(t);
  return record("LogSoftmaxBackward", {&t}, y, [=](const Grads& g, const Node&) -> Grads {
    if (gi.sizes.empty()) return {ops::mul(g[0], 0.0)};
    Tensor total = ops::sum(g[0], {d}, true);
    return {ops::sub(g[0], ops::mul(ops::exp(sy.unpack("log_softmax")), total))};
  });
}

}  // namespace strider
