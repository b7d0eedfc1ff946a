// Differentiable elementwise ops: compute with strider::ops, record the backward formula.
#include <cmath>

#include "autograd/formulas/grad_utils.h"
#include "strider/autograd/functions.h"
#include "strider/core/pointwise_table.h"

namespace strider {

using autograd::grad_like;
using autograd::InputGeometry;
using autograd::Node;
using autograd::record;
using autograd::reduce_to;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

namespace {

// Records a unary op whose input gradient is grad * dfdx(saved x, saved y).
template <class Deriv>
Tensor unary(const char* name, const Tensor& x, Tensor y, Deriv deriv) {
  if (!autograd::any_requires_grad({&x})) return y;
  SavedTensor sx(x), sy(y);
  InputGeometry gx(x);
  return record(name, {&x}, y, [=](const Grads& g, const Node&) -> Grads {
    return {reduce_to(deriv(g[0], sx.unpack(name), sy.unpack(name)), gx.sizes, gx.dtype)};
  });
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Tensor y = ops::add(a, b, alpha);
  if (!autograd::any_requires_grad({&a, &b})) return y;
  InputGeometry ga(a), gb(b);
  const double al = alpha.to_double();
  return record("AddBackward", {&a, &b}, y, [=](const Grads& g, const Node& n) -> Grads {
    return {n.needs_input_grad(0) ? reduce_to(g[0], ga.sizes, ga.dtype) : Tensor(),
            n.needs_input_grad(1) ? reduce_to(al == 1 ? g[0] : ops::mul(g[0], al), gb.sizes, gb.dtype) : Tensor()};
  });
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return unary("AddBackward", a, ops::add(a, b, alpha), [](const Tensor& g, const Tensor&, const Tensor&) { return g; });
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Tensor y = ops::sub(a, b, alpha);
  if (!autograd::any_requires_grad({&a, &b})) return y;
  InputGeometry ga(a), gb(b);
  const double al = alpha.to_double();
  return record("SubBackward", {&a, &b}, y, [=](const Grads& g, const Node& n) -> Grads {
    return {n.needs_input_grad(0) ? reduce_to(g[0], ga.sizes, ga.dtype) : Tensor(),
            n.needs_input_grad(1) ? reduce_to(ops::mul(g[0], -al), gb.sizes, gb.dtype) : Tensor()};
  });
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return unary("SubBackward", a, ops::sub(a, b, alpha), [](const Tensor& g, const Tensor&, const Tensor&) { return g; });
}
Tensor rsub(const Tensor& a, const Scalar& b) {
  return unary("RsubBackward", a, ops::rsub(a, b), [](const Tensor& g, const Tensor&, const Tensor&) { return ops::neg(g); });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor y = ops::mul(a, b);
  if (!autograd::any_requires_grad({&a, &b})) return y;
  SavedTensor sa(a), sb(b);
  InputGeometry ga(a), gb(b);
  return record("MulBackward", {&a, &b}, y, [=](const Grads& g, const Node& n) -> Grads {
    return {n.needs_input_grad(0) ? reduce_to(ops::mul(g[0], sb.unpack("mul")), ga.sizes, ga.dtype) : Tensor(),
            n.needs_input_grad(1) ? reduce_to(ops::mul(g[0], sa.unpack("mul")), gb.sizes, gb.dtype) : Tensor()};
  });
}
Tensor mul(const Tensor& a, const Scalar& b) {
  const double s = b.to_double();
  return unary("MulBackward", a, ops::mul(a, b), [s](const Tensor& g, const Tensor&, const Tensor&) { return ops::mul(g, s); });
}
Tensor div(const Tensor& a, const Tensor& b) {
  Tensor y = ops::div(a, b);
  if (!autograd::any_requires_grad({&a, &b})) return y;
  SavedTensor sb(b), sy(y);
  InputGeometry ga(a), gb(b);
  return record("DivBackward", {&a, &b}, y, [=](const Grads& g, const Node& n) -> Grads {
    Tensor bb = sb.unpack("div");
    Tensor ga_ = ops::div(g[0], bb);
    return {n.needs_input_grad(0) ? reduce_to(ga_, ga.sizes, ga.dtype) : Tensor(),
            n.needs_input_grad(1) ? reduce_to(ops::neg(ops::mul(ga_, sy.unpack("div"))), gb.sizes, gb.dtype) : Tensor()};
  });
}
Tensor div(const Tensor& a, const Scalar& b) {
  const double s = b.to_double();
  return unary("DivBackward", a, ops::div(a, b), [s](const Tensor& g, const Tensor&, const Tensor&) { return ops::div(g, s); });
}
// As ops::rdiv, PyTorch's a.reciprocal() * b: both nodes recorded, so the gradient is theirs.
Tensor rdiv(const Tensor& a, const Scalar& b) { return mul(reciprocal(a), b); }
Tensor pow(const Tensor& a, const Scalar& e) {
  const double p = e.to_double();
  return unary("PowBackward", a, ops::pow(a, e), [p](const Tensor& g, const Tensor& x, const Tensor&) {
    if (p == 0) return zeros_like(g);  // PyTorch's zeros_like(self): no NaN from an infinite g
    return ops::mul(g, ops::mul(ops::pow(x, p - 1), p));
  });
}
Tensor pow(const Tensor& a, const Tensor& e) {
  Tensor y = ops::pow(a, e);
  if (!autograd::any_requires_grad({&a, &e})) return y;
  SavedTensor sa(a), se(e), sy(y);
  InputGeometry ga(a), ge(e);
  return record("PowBackward", {&a, &e}, y, [=](const Grads& g, const Node& n) -> Grads {
    Tensor x = sa.unpack("pow"), p = se.unpack("pow");
    Tensor dx, dp;
    if (n.needs_input_grad(0)) dx = reduce_to(ops::mul(g[0], ops::mul(p, ops::pow(x, ops::sub(p, 1)))), ga.sizes, ga.dtype);
    if (n.needs_input_grad(1)) {
      // d(x^p)/dp = x^p log x, taken as 0 where x == 0 (PyTorch's convention).
      Tensor logx = ops::where(ops::eq(x, 0), Scalar(0.0), ops::log(x));
      dp = reduce_to(ops::mul(g[0], ops::mul(sy.unpack("pow"), logx)), ge.sizes, ge.dtype);
    }
    return {dx, dp};
  });
}

namespace {
Tensor min_max_backward(const char* name, const Tensor& a, const Tensor& b, Tensor y, bool is_max) {
  if (!autograd::any_requires_grad({&a, &b})) return y;
  SavedTensor sa(a), sb(b);
  InputGeometry ga(a), gb(b);
  return record(name, {&a, &b}, y, [=](const Grads& g, const Node& n) -> Grads {
    Tensor x = sa.unpack(name), z = sb.unpack(name);
    // Ties split the gradient evenly, as PyTorch does.
    Tensor a_wins = is_max ? ops::gt(x, z) : ops::lt(x, z);
    Tensor tie = ops::eq(x, z);
    Tensor share_a = ops::add(ops::to(a_wins, g[0].dtype()), ops::mul(ops::to(tie, g[0].dtype()), 0.5));
    Tensor share_b = ops::rsub(share_a, 1.0);
    return {n.needs_input_grad(0) ? reduce_to(ops::mul(g[0], share_a), ga.sizes, ga.dtype) : Tensor(),
            n.needs_input_grad(1) ? reduce_to(ops::mul(g[0], share_b), gb.sizes, gb.dtype) : Tensor()};
  });
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) { return min_max_backward("MaximumBackward", a, b, ops::maximum(a, b), true); }
Tensor minimum(const Tensor& a, const Tensor& b) { return min_max_backward("MinimumBackward", a, b, ops::minimum(a, b), false); }

// The table's rows (core/pointwise_table.h): a Plain row's gradient is its last column; NoGrad,
// Compare and Logical rows record nothing. Custom and Arith rows are written by hand here.
#define STRIDER_UNARY_FUNCTION(Enum, function, signature, kind, rule, domain, exact, fast, gradient) \
  STRIDER_UNARY_##kind(Enum, function, gradient)
#define STRIDER_UNARY_Plain(Enum, function, gradient)                                            \
  Tensor function(const Tensor& a) {                                                            \
    return unary(#Enum "Backward", a, ops::function(a),                                          \
                 []([[maybe_unused]] const Tensor& g, [[maybe_unused]] const Tensor& x,          \
                    [[maybe_unused]] const Tensor& y) { return gradient; });                     \
  }
#define STRIDER_UNARY_NoGrad(Enum, function, gradient) \
  Tensor function(const Tensor& a) { return ops::function(a); }
#define STRIDER_UNARY_Custom(Enum, function, gradient)
STRIDER_UNARY_OPS(STRIDER_UNARY_FUNCTION)

#define STRIDER_BINARY_FUNCTION(Enum, function, signature, kind, ...) STRIDER_BINARY_##kind(function, signature)
#define STRIDER_BINARY_Arith(function, signature)
#define STRIDER_BINARY_Compare(function, signature) STRIDER_NO_GRADIENT_##signature(function)
#define STRIDER_BINARY_Logical(function, signature) STRIDER_NO_GRADIENT_##signature(function)
#define STRIDER_NO_GRADIENT_TensorOrScalar(function)                                \
  Tensor function(const Tensor& a, const Tensor& b) { return ops::function(a, b); } \
  Tensor function(const Tensor& a, const Scalar& b) { return ops::function(a, b); }
#define STRIDER_NO_GRADIENT_Tensors(function) \
  Tensor function(const Tensor& a, const Tensor& b) { return ops::function(a, b); }
STRIDER_BINARY_OPS(STRIDER_BINARY_FUNCTION)

Tensor gelu(const Tensor& a, std::string_view approximate) {
  const std::string form(approximate);
  return unary("GeluBackward", a, ops::gelu(a, approximate), [form](const Tensor& g, const Tensor& x, const Tensor&) {
    return ops::gelu_backward(g, x, form);
  });
}
Tensor leaky_relu(const Tensor& a, double s) {
  return unary("LeakyReluBackward", a, ops::leaky_relu(a, s),
               [s](const Tensor& g, const Tensor& x, const Tensor&) { return ops::leaky_relu_backward(g, x, s); });
}
Tensor elu(const Tensor& a, double alpha) {
  return unary("EluBackward", a, ops::elu(a, alpha),
               [alpha](const Tensor& g, const Tensor& x, const Tensor&) { return ops::elu_backward(g, x, alpha); });
}
Tensor softplus(const Tensor& a, double beta, double threshold) {
  return unary("SoftplusBackward", a, ops::softplus(a, beta, threshold),
               [beta, threshold](const Tensor& g, const Tensor& x, const Tensor&) {
                 return ops::softplus_backward(g, x, beta, threshold);
               });
}
Tensor hardtanh(const Tensor& a, double lo, double hi) {
  return unary("HardtanhBackward", a, ops::hardtanh(a, lo, hi),
               [lo, hi](const Tensor& g, const Tensor& x, const Tensor&) { return ops::hardtanh_backward(g, x, lo, hi); });
}
Tensor relu6(const Tensor& a) { return hardtanh(a, 0.0, 6.0); }
Tensor clamp(const Tensor& a, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  // PyTorch's clamp_backward: where(mask, grad, 0) with the mask made from x by comparisons and an
  // in-place and, so the mask, and the gradient, take x's strides on its size-1 dims too (an
  // out-of-place and of two ambiguous channels-last masks is contiguous).
  return unary("ClampBackward", a, ops::clamp(a, lo, hi), [lo, hi](const Tensor& g, const Tensor& x, const Tensor&) {
    if (!lo && !hi) return g;
    Tensor inside = lo ? ops::ge(x, *lo) : ops::le(x, *hi);
    if (lo && hi) ops::copy_(inside, ops::logical_and(inside, ops::le(x, *hi)));  // in place, as PyTorch's
    return ops::where(inside, g, Scalar(0.0));
  });
}

bool equal(const Tensor& a, const Tensor& b) { return ops::equal(a, b); }

namespace {
Tensor where_backward(const Tensor& cond, const Tensor& x, const Tensor& y, Tensor out) {
  if (!autograd::any_requires_grad({&x, &y})) return out;
  SavedTensor sc(cond);
  InputGeometry gx(x), gy(y);
  return record("WhereBackward", {&x, &y}, out, [=](const Grads& g, const Node& n) -> Grads {
    Tensor c = sc.unpack("where");
    // zeros, not g * 0: an infinite gradient (a mean over nothing) must give the side not taken 0, as
    // PyTorch's where(cond, grad, zeros_like(grad)), not inf * 0 = NaN.
    Tensor zero = zeros_like(g[0]);
    return {n.needs_input_grad(0) ? reduce_to(ops::where(c, g[0], zero), gx.sizes, gx.dtype) : Tensor(),
            n.needs_input_grad(1) ? reduce_to(ops::where(c, zero, g[0]), gy.sizes, gy.dtype) : Tensor()};
  });
}
}  // namespace

Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y) {
  return where_backward(cond, x, y, ops::where(cond, x, y));
}
Tensor where(const Tensor& cond, const Tensor& x, const Scalar& y) {
  Tensor ys = scalar_tensor(y, x.dtype());
  return where_backward(cond, x, ys, ops::where(cond, x, y));
}
Tensor where(const Tensor& cond, const Scalar& x, const Tensor& y) {
  Tensor xs = scalar_tensor(x, y.dtype());
  return where_backward(cond, xs, y, ops::where(cond, x, y));
}

Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  Tensor y = ops::addcmul(self, t1, t2, value);
  if (!autograd::any_requires_grad({&self, &t1, &t2})) return y;
  SavedTensor s1(t1), s2(t2);
  InputGeometry g0(self), g1(t1), g2(t2);
  const double v = value.to_double();
  return record("AddcmulBackward", {&self, &t1, &t2}, y, [=](const Grads& g, const Node& n) -> Grads {
    return {n.needs_input_grad(0) ? reduce_to(g[0], g0.sizes, g0.dtype) : Tensor(),
            n.needs_input_grad(1) ? reduce_to(ops::mul(ops::mul(g[0], s2.unpack("addcmul")), v), g1.sizes, g1.dtype) : Tensor(),
            n.needs_input_grad(2) ? reduce_to(ops::mul(ops::mul(g[0], s1.unpack("addcmul")), v), g2.sizes, g2.dtype) : Tensor()};
  });
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  Tensor y = ops::masked_fill(self, mask, value);
  if (!autograd::any_requires_grad({&self})) return y;
  SavedTensor sm(mask);
  InputGeometry gs(self);
  return record("MaskedFillBackward", {&self}, y, [=](const Grads& g, const Node&) -> Grads {
    return {reduce_to(ops::masked_fill(g[0], sm.unpack("masked_fill"), 0.0), gs.sizes, gs.dtype)};
  });
}

const Tensor& add_out(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  autograd::check_inplace(out, "add_out");
  STRIDER_CHECK(!autograd::any_requires_grad({&a, &b}), "add_out",
                "out= variants don't support automatic differentiation; use add()");
  return ops::add_out(out, a, b, alpha);
}

// In place: allowed on tensors outside any graph (or under NoGradGuard).
const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  autograd::check_inplace(self, "add_");
  return ops::add_(self, other, alpha);
}
const Tensor& add_(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  autograd::check_inplace(self, "add_");
  return ops::add_(self, other, alpha);
}
const Tensor& sub_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  autograd::check_inplace(self, "sub_");
  return ops::sub_(self, other, alpha);
}
const Tensor& mul_(const Tensor& self, const Tensor& other) {
  autograd::check_inplace(self, "mul_");
  return ops::mul_(self, other);
}
const Tensor& mul_(const Tensor& self, const Scalar& other) {
  autograd::check_inplace(self, "mul_");
  return ops::mul_(self, other);
}
const Tensor& div_(const Tensor& self, const Tensor& other) {
  autograd::check_inplace(self, "div_");
  return ops::div_(self, other);
}
const Tensor& div_(const Tensor& self, const Scalar& other) {
  autograd::check_inplace(self, "div_");
  return ops::div_(self, other);
}
const Tensor& relu_(const Tensor& self) {
  autograd::check_inplace(self, "relu_");
  return ops::relu_(self);
}
const Tensor& clamp_(const Tensor& self, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  autograd::check_inplace(self, "clamp_");
  return ops::clamp_(self, lo, hi);
}

}  // namespace strider
