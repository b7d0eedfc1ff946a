#pragma once
// One finite-difference gradient check for every differentiable op (flashlight's idea): run in
// float64, compare the autograd vector-Jacobian product against central differences of
// <v, f(x)> for a fixed random v.
#include <cmath>
#include <functional>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>
#include <strider/strider.h>

namespace strider::testing {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// Reads/writes element `k` (logical row-major order) of a float64 tensor of any layout.
inline double& element(const Tensor& t, int64_t k) {
  int64_t off = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    off += (k % t.sizes()[d]) * t.strides()[d];
    k /= t.sizes()[d];
  }
  return static_cast<double*>(t.data())[off];
}

inline double dot(const Tensor& a, const Tensor& b) {
  NoGradGuard no_grad;
  return sum(mul(a, b)).item<double>();
}

// `inputs` must be float64 leaves (any layout); gradients are checked for those requiring grad.
inline ::testing::AssertionResult gradcheck(const Fn& f, const std::vector<Tensor>& inputs,
                                            double eps = 1e-6, double atol = 1e-6, double rtol = 1e-5) {
  Tensor y = f(inputs);
  Generator gen(1234);
  Tensor v = randn(y.sizes(), kDouble, &gen);
  std::vector<Tensor> wrt;
  for (const Tensor& x : inputs)
    if (x.requires_grad()) wrt.push_back(x);
  if (!y.requires_grad()) return ::testing::AssertionFailure() << "output does not require grad";
  std::vector<Tensor> analytic = autograd::grad({y}, wrt, {v});
  size_t w = 0;
  for (const Tensor& x : inputs) {
    if (!x.requires_grad()) continue;
    const Tensor& ga = analytic[w++];
    if (!ga.defined()) return ::testing::AssertionFailure() << "no gradient for input " << w - 1;
    if (ga.sizes() != x.sizes())
      return ::testing::AssertionFailure() << "gradient shape " << ga.sizes() << " != input " << x.sizes();
    NoGradGuard no_grad;
    for (int64_t k = 0; k < x.numel(); ++k) {
      double& e = element(x, k);
      const double saved = e;
      e = saved + eps;
      double plus = dot(f(inputs), v);
      e = saved - eps;
      double minus = dot(f(inputs), v);
      e = saved;
      double numeric = (plus - minus) / (2 * eps);
      double analytic_k = element(ga.to(kDouble), k);
      if (std::fabs(numeric - analytic_k) > atol + rtol * std::fabs(numeric))
        return ::testing::AssertionFailure() << "input " << w - 1 << " element " << k << ": analytic "
                                             << analytic_k << " vs numeric " << numeric;
    }
  }
  return ::testing::AssertionSuccess();
}

// A float64 leaf in [lo, hi) requiring grad, optionally converted to a memory format.
inline Tensor leaf(IntArrayRef shape, uint64_t seed, double lo = -1, double hi = 1,
                   MemoryFormat fmt = MemoryFormat::Contiguous) {
  Generator g(seed);
  Tensor t = rand(shape, kDouble, &g) * (hi - lo) + lo;
  if (fmt != MemoryFormat::Contiguous) t = t.contiguous(fmt);
  return t.detach().requires_grad_();
}

}  // namespace strider::testing
