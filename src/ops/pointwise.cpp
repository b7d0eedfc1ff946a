// Elementwise ops: promote, decide the layout (pointwise_layout), allocate, run the kernel.
#include "strider/ops/pointwise.h"

#include <cmath>
#include <limits>

#include "core/make_tensor.h"
#include "kernels/pointwise.h"
#include "ops/kernel_dispatch.h"
#include "ops/memory_overlap.h"
#include "ops/pointwise_layout.h"
#include "strider/core/layout.h"
#include "strider/ops/check_mode.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"
#include "strider/ops/reduce.h"
#include "strider/ops/view.h"

namespace strider::ops {
namespace {

using kernels::BinaryOp;
using kernels::PointwiseArgs;
using kernels::UnaryOp;


PointwiseInput wrap(const Scalar& s) {
  return {scalar_tensor(s, s.is_floating_point() ? kDouble : s.default_dtype()), true};
}

// Brings every input to `dtype` (SPEC §8.2: preserve-format conversion, so expanded inputs
// densify before the layout is decided).
Tensor promote(const PointwiseInput& in, ScalarType dtype) {
  return in.tensor.dtype() == dtype ? in.tensor : to(in.tensor, dtype);
}

Tensor broadcast_to(const Tensor& t, IntArrayRef shape) {
  return t.sizes() == shape ? t : expand(t, shape);
}

// Allocates the functional output of an op over `operands` (promoted, in TensorIterator order).
Tensor allocate_output(std::span<const Tensor* const> operands, ScalarType dtype, const char* op) {
  OutputGeometry g = pointwise_output_geometry(operands, op);
  return make_tensor(std::move(g.sizes), std::move(g.strides), dtype);
}

Tensor unary_op(UnaryOp op, const Tensor& a, PointwiseArgs args = {}) {
  STRIDER_CHECK(a.defined(), kernels::name(op), "input tensor is undefined");
  ScalarType dtype = a.dtype();
  if (kernels::needs_floating(op) && !is_floating_point(dtype)) dtype = kFloat;
  STRIDER_CHECK(!(dtype == kBool && kernels::dtype_rule(op) == kernels::DtypeRule::SameNotBool),
                kernels::name(op), "not supported for bool tensors (shape ", a.sizes(),
                "); use logical_not, or convert with .to(kFloat)");
  Tensor in = a.dtype() == dtype ? a : to(a, dtype);
  const Tensor* operands[] = {&in};
  Tensor out = allocate_output(operands, kernels::dtype_rule(op) == kernels::DtypeRule::Bool ? kBool : dtype, kernels::name(op));
  Tensor src = broadcast_to(in, out.sizes());
  kernels::unary({op, out, src, args}, dispatch(kernels::name(op)));
  check_memory_format_kept(kernels::name(op), {&a}, out);
  return out;
}

// lhs_first=false means the wrapped scalar is the first operand of the math (b - a, b / a).
Tensor binary_op(BinaryOp op, const PointwiseInput& a, const PointwiseInput& b,
                 PointwiseArgs args = {}, bool lhs_first = true) {
  const char* name = kernels::name(op);
  STRIDER_CHECK(a.tensor.defined() && b.tensor.defined(), name, "input tensor is undefined");
  ScalarType common = result_type({a, b});
  if (kernels::needs_floating(op) && !is_floating_point(common)) common = kFloat;
  STRIDER_CHECK(!(common == kBool && (op == BinaryOp::Sub || op == BinaryOp::Div || op == BinaryOp::Pow)),
                name, "subtraction, division and powers of bool tensors are not supported (shapes ",
                a.tensor.sizes(), " and ", b.tensor.sizes(), "); use logical ops or convert first");
  Tensor pa = promote(a, common), pb = promote(b, common);
  // Wrapped numbers take part in the layout decision after the tensors (SPEC §8.1).
  const Tensor* order[] = {&pa, &pb};
  if (a.wrapped && !b.wrapped) std::swap(order[0], order[1]);
  ScalarType out_dtype = kernels::is_comparison(op) ? kBool : common;
  Tensor out = allocate_output(order, out_dtype, name);
  Tensor x = broadcast_to(pa, out.sizes()), y = broadcast_to(pb, out.sizes());
  if (!lhs_first) std::swap(x, y);
  kernels::binary({op, out, x, y, args}, dispatch(name));
  check_memory_format_kept(name, {&a.tensor, &b.tensor}, out);
  return out;
}

// Logical rows (kernels::BinaryKind::Logical) take their operands as bool.
Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b, PointwiseArgs args = {}) {
  if (kernels::kind(op) == kernels::BinaryKind::Logical)
    return binary_op(op, PointwiseInput{to(a, kBool)}, PointwiseInput{to(b, kBool)}, args);
  return binary_op(op, PointwiseInput{a}, PointwiseInput{b}, args);
}
Tensor binary_op(BinaryOp op, const Tensor& a, const Scalar& b, PointwiseArgs args = {}) {
  return binary_op(op, PointwiseInput{a}, wrap(b), args);
}

PointwiseArgs alpha_args(const Scalar& alpha) {
  PointwiseArgs p;
  p.alpha = alpha.to_double();
  return p;
}

// In place: self is both the output and the first input, and keeps its strides.
const Tensor& inplace_binary(BinaryOp op, const Tensor& self, const PointwiseInput& other, PointwiseArgs args) {
  const char* name = kernels::name(op);
  check_no_overlap(name, self, {&other.tensor});
  ScalarType common = result_type({PointwiseInput{self}, other});
  if (kernels::needs_floating(op) && !is_floating_point(common)) common = kFloat;
  STRIDER_CHECK(can_cast(common, self.dtype()), name, "result type ", common,
                " can't be cast to the desired output type ", self.dtype(),
                " (in-place op on a tensor of shape ", self.sizes(), "); use the out-of-place op");
  DimVector shape = layout::broadcast_shapes(self.sizes(), other.tensor.sizes(), name);
  STRIDER_CHECK(IntArrayRef(shape) == self.sizes(), name, "output with shape ", self.sizes(),
                " doesn't match the broadcast shape ", IntArrayRef(shape));
  if (common != self.dtype()) {
    copy_(self, binary_op(op, PointwiseInput{self}, other, args));
    return self;
  }
  Tensor y = broadcast_to(promote(other, common), self.sizes());
  kernels::binary({op, self, self, y, args}, dispatch(name));
  self.storage()->bump_generation();
  return self;
}

const Tensor& inplace_unary(UnaryOp op, const Tensor& self, PointwiseArgs args = {}) {
  check_no_overlap(kernels::name(op), self, {});
  kernels::unary({op, self, self, args}, dispatch(kernels::name(op)));
  self.storage()->bump_generation();
  return self;
}

PointwiseArgs clamp_args(const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  STRIDER_CHECK(lo || hi, "clamp", "at least one of 'min' or 'max' must not be None");
  PointwiseArgs p;
  if (lo) p.lo = lo->to_double();
  if (hi) p.hi = hi->to_double();
  return p;
}

// PyTorch's clamp promotes an integer tensor with a floating bound to the default float dtype.
// With both bounds given, a NaN one makes every element NaN; a single NaN bound changes nothing
// (PyTorch 1.13's min(max(x, lo), hi) against its clamp_min / clamp_max; the kernel reads NaN as
// "no bound").
bool floating_bound(const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  return (lo && lo->is_floating_point()) || (hi && hi->is_floating_point());
}
bool nan_bound(const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  return lo && hi && (std::isnan(lo->to_double()) || std::isnan(hi->to_double()));
}

}  // namespace

// The table's rows (core/pointwise_table.h): unary rows of kind Plain and NoGrad, and every
// binary row by its signature. The Custom rows' functions and the reversed scalar forms follow.
#define STRIDER_UNARY_FUNCTION(Enum, function, signature, kind, ...) STRIDER_UNARY_##kind(Enum, function)
#define STRIDER_UNARY_Plain(Enum, function) \
  Tensor function(const Tensor& a) { return unary_op(UnaryOp::Enum, a); }
#define STRIDER_UNARY_NoGrad(Enum, function) STRIDER_UNARY_Plain(Enum, function)
#define STRIDER_UNARY_Custom(Enum, function)
STRIDER_UNARY_OPS(STRIDER_UNARY_FUNCTION)

#define STRIDER_BINARY_FUNCTION(Enum, function, signature, ...) STRIDER_BINARY_##signature(Enum, function)
#define STRIDER_BINARY_Alpha(Enum, function)                                 \
  Tensor function(const Tensor& a, const Tensor& b, const Scalar& alpha) { \
    return binary_op(BinaryOp::Enum, a, b, alpha_args(alpha));             \
  }                                                                         \
  Tensor function(const Tensor& a, const Scalar& b, const Scalar& alpha) { \
    return binary_op(BinaryOp::Enum, a, b, alpha_args(alpha));             \
  }
#define STRIDER_BINARY_TensorOrScalar(Enum, function)                                            \
  Tensor function(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Enum, a, b); } \
  Tensor function(const Tensor& a, const Scalar& b) { return binary_op(BinaryOp::Enum, a, b); }
#define STRIDER_BINARY_Tensors(Enum, function) \
  Tensor function(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Enum, a, b); }
#define STRIDER_BINARY_None(Enum, function)
STRIDER_BINARY_OPS(STRIDER_BINARY_FUNCTION)

Tensor rsub(const Tensor& a, const Scalar& b) {
  return binary_op(BinaryOp::Sub, PointwiseInput{a}, wrap(b), {}, /*lhs_first=*/false);
}
// Python's `b / a` is Tensor.__rtruediv__: a.reciprocal() * b, which rounds twice (a true
// division differs by an ulp in about a third of float32 elements) and takes reciprocal's layout.
Tensor rdiv(const Tensor& a, const Scalar& b) { return mul(reciprocal(a), b); }
Tensor threshold_backward(const Tensor& grad, const Tensor& result) {
  return binary_op(BinaryOp::ThresholdBackward, grad, result);
}
// An integer tensor to an integer power stays integer and wraps (PyTorch's rule); a floating
// base or exponent computes in floating point.
Tensor pow(const Tensor& a, const Scalar& e) {
  PointwiseArgs p;
  p.exponent = e.to_double();
  if (is_floating_point(a.dtype()) || e.is_floating_point()) return unary_op(UnaryOp::PowScalar, a, p);
  STRIDER_CHECK(e.to_double() >= 0, "pow", "integers to negative integer powers are not allowed (a ",
                a.dtype(), " tensor of shape ", a.sizes(), " to the power ", e.to_long(),
                "); convert the tensor first, e.g. pow(a.to(kFloat), ", e.to_long(), ")");
  return binary_op(BinaryOp::Pow, a, e);
}
Tensor gelu(const Tensor& a, std::string_view approximate) {
  STRIDER_CHECK(approximate == "none" || approximate == "tanh", "gelu", "approximate must be "
                "'none' or 'tanh', got '", std::string(approximate), "'");
  return unary_op(approximate == "tanh" ? UnaryOp::GeluTanh : UnaryOp::Gelu, a);
}
Tensor gelu_backward(const Tensor& grad, const Tensor& self, std::string_view approximate) {
  STRIDER_CHECK(approximate == "none" || approximate == "tanh", "gelu_backward", "approximate must be "
                "'none' or 'tanh', got '", std::string(approximate), "'");
  return binary_op(approximate == "tanh" ? BinaryOp::GeluTanhBackward : BinaryOp::GeluBackward, grad, self);
}
Tensor silu_backward(const Tensor& grad, const Tensor& self) {
  return binary_op(BinaryOp::SiluBackward, grad, self);
}

Tensor leaky_relu(const Tensor& a, double negative_slope) {
  PointwiseArgs p;
  p.alpha = negative_slope;
  return unary_op(UnaryOp::LeakyRelu, a, p);
}
Tensor elu(const Tensor& a, double alpha) {
  PointwiseArgs p;
  p.alpha = alpha;
  return unary_op(UnaryOp::Elu, a, p);
}
Tensor softplus(const Tensor& a, double beta, double threshold) {
  STRIDER_CHECK(beta != 0 && std::isfinite(beta), "softplus", "beta must be finite and non-zero, got ", beta);
  PointwiseArgs p;
  p.beta = beta;
  p.threshold = threshold;
  return unary_op(UnaryOp::Softplus, a, p);
}
Tensor hardtanh(const Tensor& a, double min_val, double max_val) {
  STRIDER_CHECK(a.defined(), "hardtanh", "input tensor is undefined");
  STRIDER_CHECK(!std::isnan(min_val) && !std::isnan(max_val), "hardtanh", "min_val and max_val must not be NaN, got ",
                min_val, " and ", max_val);
  STRIDER_CHECK(a.dtype() != kBool, "hardtanh", "not supported for bool tensors (shape ", a.sizes(),
                "); convert with .to(kFloat)");
  Tensor out = empty_like(a);
  kernels::unary({UnaryOp::Clamp, out, a, clamp_args(Scalar(min_val), Scalar(max_val))}, dispatch("hardtanh"));
  return out;
}
Tensor relu6(const Tensor& a) { return hardtanh(a, 0.0, 6.0); }

Tensor leaky_relu_backward(const Tensor& grad, const Tensor& self, double negative_slope) {
  PointwiseArgs p;
  p.alpha = negative_slope;
  return binary_op(BinaryOp::LeakyReluBackward, self, grad, p);
}
Tensor elu_backward(const Tensor& grad, const Tensor& self, double alpha, double scale, double input_scale) {
  PointwiseArgs p;
  p.alpha = alpha;
  p.scale = scale;
  p.input_scale = input_scale;
  return binary_op(BinaryOp::EluBackward, grad, self, p);
}
Tensor selu_backward(const Tensor& grad, const Tensor& self) {
  return binary_op(BinaryOp::EluBackward, grad, self, kernels::selu_args());
}
Tensor softplus_backward(const Tensor& grad, const Tensor& self, double beta, double threshold) {
  PointwiseArgs p;
  p.beta = beta;
  p.threshold = threshold;
  return binary_op(BinaryOp::SoftplusBackward, grad, self, p);
}
Tensor hardtanh_backward(const Tensor& grad, const Tensor& self, double min_val, double max_val) {
  PointwiseArgs p;
  p.lo = min_val;
  p.hi = max_val;
  return binary_op(BinaryOp::HardtanhBackward, grad, self, p);
}
Tensor hardswish_backward(const Tensor& grad, const Tensor& self) {
  return binary_op(BinaryOp::HardswishBackward, grad, self);
}
Tensor hardsigmoid_backward(const Tensor& grad, const Tensor& self) {
  return binary_op(BinaryOp::HardsigmoidBackward, grad, self);
}
Tensor mish_backward(const Tensor& grad, const Tensor& self) { return binary_op(BinaryOp::MishBackward, grad, self); }
Tensor clamp(const Tensor& a, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  const PointwiseArgs args = clamp_args(lo, hi);
  const Tensor x = !is_floating_point(a.dtype()) && floating_bound(lo, hi) ? to(a, kFloat) : a;
  if (nan_bound(lo, hi)) return full_like(x, Scalar(std::numeric_limits<double>::quiet_NaN()));
  return unary_op(UnaryOp::Clamp, x, args);
}

bool equal(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  if (a.numel() == 0) return true;
  Tensor same = eq(a, b);
  return item(sum(to(logical_not(same), kLong))).to<int64_t>() == 0;
}

namespace {

Tensor where_impl(const Tensor& cond, const PointwiseInput& x, const PointwiseInput& y) {
  STRIDER_CHECK(cond.dtype() == kBool, "where", "condition must be a bool tensor, but got ",
                cond.dtype(), " (shape ", cond.sizes(), "); compare first, e.g. gt(t, 0)");
  ScalarType common = result_type({x, y});
  Tensor px = promote(x, common), py = promote(y, common);
  const Tensor* order[] = {&cond, &px, &py};
  if (x.wrapped && !y.wrapped) std::swap(order[1], order[2]);
  Tensor out = allocate_output(order, common, "where");
  Tensor c = broadcast_to(cond, out.sizes()), bx = broadcast_to(px, out.sizes()),
         by = broadcast_to(py, out.sizes());
  kernels::where({out, c, bx, by}, dispatch("where"));
  check_memory_format_kept("where", {&cond, &x.tensor, &y.tensor}, out);
  return out;
}

}  // namespace

Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y) {
  return where_impl(cond, PointwiseInput{x}, PointwiseInput{y});
}
Tensor where(const Tensor& cond, const Tensor& x, const Scalar& y) {
  return where_impl(cond, PointwiseInput{x}, wrap(y));
}
Tensor where(const Tensor& cond, const Scalar& x, const Tensor& y) {
  return where_impl(cond, wrap(x), PointwiseInput{y});
}

Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  ScalarType common = result_type({{self}, {t1}, {t2}});
  Tensor a = promote({self}, common), b = promote({t1}, common), c = promote({t2}, common);
  const Tensor* operands[] = {&a, &b, &c};
  Tensor out = allocate_output(operands, common, "addcmul");
  Tensor ea = broadcast_to(a, out.sizes()), eb = broadcast_to(b, out.sizes()),
         ec = broadcast_to(c, out.sizes());
  const double v = value.to_double();
  kernels::addcmul({out, ea, eb, ec, v}, dispatch("addcmul"));
  check_memory_format_kept("addcmul", {&self, &t1, &t2}, out);
  return out;
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  STRIDER_CHECK(mask.dtype() == kBool, "masked_fill", "mask must be a bool tensor, but got ",
                mask.dtype(), " (shape ", mask.sizes(), ")");
  check_scalar_fits(value, self.dtype(), "masked_fill");
  // PyTorch: self and mask broadcast, then clone(contiguous) and fill in place (SPEC §8.7), so the
  // result is contiguous.
  const DimVector shape = layout::broadcast_shapes(self.sizes(), mask.sizes(), "masked_fill");
  Tensor out = clone(broadcast_to(self, shape), MemoryFormat::Contiguous);
  Tensor fill = expand(scalar_tensor(value, self.dtype()), shape);
  Tensor m = broadcast_to(mask, shape);
  kernels::where({out, m, fill, out}, dispatch("masked_fill"));
  return out;
}

const Tensor& add_out(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  ScalarType common = result_type({{a}, {b}});
  Tensor pa = promote({a}, common), pb = promote({b}, common);
  const Tensor* operands[] = {&pa, &pb};
  OutputGeometry g = pointwise_output_geometry(operands, "add_out");
  if (out.sizes() != IntArrayRef(g.sizes)) {
    const int64_t span = storage_span(g.sizes, g.strides);
    if (span > 0) out.storage()->grow(static_cast<size_t>(out.storage_offset() + span) * out.element_size());
    out.impl()->set_sizes_and_strides(std::move(g.sizes), std::move(g.strides));
  }
  STRIDER_CHECK(can_cast(common, out.dtype()), "add_out", "result type ", common,
                " can't be cast to the desired output type ", out.dtype());
  check_no_overlap("add_out", out, {&a, &b});
  if (common != out.dtype()) {
    copy_(out, add(a, b, alpha));
    return out;
  }
  Tensor x = broadcast_to(pa, out.sizes()), y = broadcast_to(pb, out.sizes());
  PointwiseArgs args = alpha_args(alpha);
  kernels::binary({BinaryOp::Add, out, x, y, args}, dispatch("add"));
  out.storage()->bump_generation();
  return out;
}

const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return inplace_binary(BinaryOp::Add, self, PointwiseInput{other}, alpha_args(alpha));
}
const Tensor& add_(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return inplace_binary(BinaryOp::Add, self, wrap(other), alpha_args(alpha));
}
const Tensor& sub_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return inplace_binary(BinaryOp::Sub, self, PointwiseInput{other}, alpha_args(alpha));
}
const Tensor& mul_(const Tensor& self, const Tensor& other) { return inplace_binary(BinaryOp::Mul, self, PointwiseInput{other}, {}); }
const Tensor& mul_(const Tensor& self, const Scalar& other) { return inplace_binary(BinaryOp::Mul, self, wrap(other), {}); }
const Tensor& div_(const Tensor& self, const Tensor& other) { return inplace_binary(BinaryOp::Div, self, PointwiseInput{other}, {}); }
const Tensor& div_(const Tensor& self, const Scalar& other) { return inplace_binary(BinaryOp::Div, self, wrap(other), {}); }
const Tensor& relu_(const Tensor& self) { return inplace_unary(UnaryOp::Relu, self); }
const Tensor& clamp_(const Tensor& self, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  const PointwiseArgs args = clamp_args(lo, hi);
  STRIDER_CHECK(is_floating_point(self.dtype()) || !floating_bound(lo, hi), "clamp_", "a floating bound on a ",
                self.dtype(), " tensor gives float32 values, which cannot be written into it in place; use "
                "clamp(x, ...) (it returns float32) or integer bounds");
  if (nan_bound(lo, hi)) return fill_(self, Scalar(std::numeric_limits<double>::quiet_NaN()));
  return inplace_unary(UnaryOp::Clamp, self, args);
}

}  // namespace strider::ops
