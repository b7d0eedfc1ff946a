#pragma once
// Elementwise ops. Inputs broadcast NumPy-style and promote like torch.result_type; the output
// layout follows PyTorch's TensorIterator rules (SPEC §8): same-format inputs keep their format,
// mixed formats follow the first input that decides, a channels-last tensor plus a broadcast
// bias stays channels-last. In-place ops (`x.add_(y)`) and `*_out` destinations keep their
// strides. bfloat16 and float16 compute through float32.
#include <optional>
#include <string_view>

#include "strider/core/pointwise_table.h"
#include "strider/core/tensor.h"

namespace strider::ops {

// The rows of core/pointwise_table.h, declared from the table (one row per op; its comment
// gives each column). Unary, f(a): the row's dtype rule decides the result's dtype: Floating
// rows (e.g. exp, log, sigmoid, gelu) give float32 for integer inputs, SameNotBool rows (e.g. neg, relu) refuse bool, logical_not gives bool. Arguments:
// gelu(a, approximate) takes "none" (erf form) or "tanh"; clamp(a, min, max) needs a bound;
// silu is x * sigmoid(x) (torch.nn.functional.silu).
STRIDER_UNARY_OPS(STRIDER_DECLARE_POINTWISE)
// Binary, f(a, b), and f(a, Scalar b) where the row's signature says: add and sub take alpha
// (a + alpha * b); div is true division (Floating: integer inputs give float32); pow keeps an
// integer dtype for integer operands and wraps as PyTorch's does (uint8 249^2 is 49; a negative
// Scalar exponent is an Error, a negative tensor exponent gives 0 unless the base is +-1), a
// floating base or exponent computes in floating point;
// maximum and minimum propagate NaN; comparisons give bool; logical_and and logical_or take
// any dtype, as bool.
STRIDER_BINARY_OPS(STRIDER_DECLARE_POINTWISE)
Tensor rsub(const Tensor& a, const Scalar& b);  // b - a
Tensor rdiv(const Tensor& a, const Scalar& b);  // b / a as Python's: a.reciprocal() * b
// relu's backward in one pass: grad where result > 0, else 0 (grad's layout decides).
Tensor threshold_backward(const Tensor& grad, const Tensor& result);
// grad * d/dx gelu(x) in one pass (approximate "none" or "tanh", as gelu).
Tensor gelu_backward(const Tensor& grad, const Tensor& self, std::string_view approximate = "none");
// grad * d/dx silu(x) in one pass; the layout is decided by (grad, self), as PyTorch's.
Tensor silu_backward(const Tensor& grad, const Tensor& self);
// The activations' gradients, one pass each, as PyTorch 1.13's *_backward ops (leaky_relu's takes
// (self, grad) in that order for the layout, as PyTorch's does; the others (grad, self)).
Tensor leaky_relu_backward(const Tensor& grad, const Tensor& self, double negative_slope);
Tensor elu_backward(const Tensor& grad, const Tensor& self, double alpha, double scale = 1.0, double input_scale = 1.0);
Tensor selu_backward(const Tensor& grad, const Tensor& self);
Tensor softplus_backward(const Tensor& grad, const Tensor& self, double beta, double threshold);
Tensor hardtanh_backward(const Tensor& grad, const Tensor& self, double min_val, double max_val);
Tensor hardswish_backward(const Tensor& grad, const Tensor& self);
Tensor hardsigmoid_backward(const Tensor& grad, const Tensor& self);
Tensor mish_backward(const Tensor& grad, const Tensor& self);
// clamp(a, min_val, max_val) into empty_like(a) (PyTorch's hardtanh: a dense input keeps its
// strides exactly); relu6 is hardtanh(a, 0, 6).
Tensor hardtanh(const Tensor& a, double min_val = -1.0, double max_val = 1.0);
Tensor relu6(const Tensor& a);

// True when both have the same shape and every element compares equal (torch.equal).
bool equal(const Tensor& a, const Tensor& b);

// cond ? x : y; cond must be bool. x and y promote to their common dtype.
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y);
Tensor where(const Tensor& cond, const Tensor& x, const Scalar& y);
Tensor where(const Tensor& cond, const Scalar& x, const Tensor& y);
// self + value * t1 * t2.
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
// A contiguous copy of self with `value` where mask (bool, broadcastable) is true.
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value);

// Writes a + alpha * b into `out`. An `out` of the right shape keeps its strides; any other is
// resized (restrided as the functional op would lay it out).
const Tensor& add_out(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha = 1);

// In place: self keeps its strides; the result type must be castable to self's dtype.
const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
const Tensor& add_(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
const Tensor& sub_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
const Tensor& mul_(const Tensor& self, const Tensor& other);
const Tensor& mul_(const Tensor& self, const Scalar& other);
const Tensor& div_(const Tensor& self, const Tensor& other);
const Tensor& div_(const Tensor& self, const Scalar& other);
const Tensor& relu_(const Tensor& self);
const Tensor& clamp_(const Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max);

}  // namespace strider::ops
