// Tensor's arithmetic methods and operators: the differentiable free functions, as methods.
#include "strider/autograd/functions.h"

namespace strider {

Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return strider::add(*this, o, alpha); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return strider::sub(*this, o, alpha); }
Tensor Tensor::mul(const Tensor& o) const { return strider::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return strider::div(*this, o); }
const Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) const { return strider::add_(*this, o, alpha); }
const Tensor& Tensor::mul_(const Tensor& o) const { return strider::mul_(*this, o); }
const Tensor& Tensor::mul_(const Scalar& o) const { return strider::mul_(*this, o); }
Tensor Tensor::neg() const { return strider::neg(*this); }
Tensor Tensor::abs() const { return strider::abs(*this); }
Tensor Tensor::exp() const { return strider::exp(*this); }
Tensor Tensor::log() const { return strider::log(*this); }
Tensor Tensor::sqrt() const { return strider::sqrt(*this); }
Tensor Tensor::relu() const { return strider::relu(*this); }
Tensor Tensor::sigmoid() const { return strider::sigmoid(*this); }
Tensor Tensor::tanh() const { return strider::tanh(*this); }
Tensor Tensor::sum() const { return strider::sum(*this); }
Tensor Tensor::sum(IntArrayRef dims, bool keepdim) const { return strider::sum(*this, dims, keepdim); }
Tensor Tensor::mean() const { return strider::mean(*this); }
Tensor Tensor::mean(IntArrayRef dims, bool keepdim) const { return strider::mean(*this, dims, keepdim); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Scalar& a, const Tensor& b) { return rsub(b, a); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Scalar& a, const Tensor& b) { return rdiv(b, a); }
Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace strider
