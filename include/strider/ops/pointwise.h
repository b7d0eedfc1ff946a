#pragma once
// Elementwise ops. Inputs broadcast NumPy-style and promote like torch.result_type; the output
// layout follows PyTorch's TensorIterator rules (SPEC §8): same-format inputs keep their format,
// mixed formats follow the first input that decides, a channels-last tensor plus a broadcast
// bias stays channels-last. In-place ops (`x.add_(y)`) and `*_out` destinations keep their
// strides. bfloat16 and float16 compute through float32.
#include <optional>
#include <string_view>

#include "strider/core/tensor.h"

namespace strider::ops {

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor rsub(const Tensor& a, const Scalar& b);  // b - a
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
// True division: integer inputs give float32.
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Scalar& b);
Tensor rdiv(const Tensor& a, const Scalar& b);  // b / a
Tensor pow(const Tensor& a, const Tensor& exponent);
Tensor pow(const Tensor& a, const Scalar& exponent);
Tensor maximum(const Tensor& a, const Tensor& b);
// relu's backward in one pass: grad where result > 0, else 0 (grad's layout decides).
Tensor threshold_backward(const Tensor& grad, const Tensor& result);
Tensor minimum(const Tensor& a, const Tensor& b);

Tensor neg(const Tensor& a);
Tensor abs(const Tensor& a);
Tensor sign(const Tensor& a);
// exp, log, sqrt, rsqrt, reciprocal, sigmoid, tanh and gelu give float32 for integer inputs.
Tensor exp(const Tensor& a);
Tensor erf(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor rsqrt(const Tensor& a);
Tensor reciprocal(const Tensor& a);
Tensor relu(const Tensor& a);
Tensor sigmoid(const Tensor& a);
// x * sigmoid(x) (torch.nn.functional.silu).
Tensor silu(const Tensor& a);
Tensor tanh(const Tensor& a);
// approximate: "none" (erf form) or "tanh".
Tensor gelu(const Tensor& a, std::string_view approximate = "none");
Tensor clamp(const Tensor& a, std::optional<Scalar> min, std::optional<Scalar> max);

Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Scalar& b);
Tensor logical_not(const Tensor& a);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);

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
