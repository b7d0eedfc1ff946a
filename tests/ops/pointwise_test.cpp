// Elementwise values, type promotion, in-place and out= semantics.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <cmath>
#include <limits>
#include <optional>

#include "strider/ops/pointwise.h"
#include "support/compare.h"

namespace strider {
namespace {

using testing::all_close;
using testing::values;

Tensor T(std::vector<double> v, ScalarType t = kFloat) { return tensor(v, t); }

TEST(Pointwise, ArithmeticValues) {
  Tensor a = T({1, 2, 3, 4}), b = T({0.5, -1, 2, 8});
  EXPECT_EQ(values(a + b), (std::vector<double>{1.5, 1, 5, 12}));
  EXPECT_EQ(values(sub(a, b, 2)), (std::vector<double>{0, 4, -1, -12}));
  EXPECT_EQ(values(a * b), (std::vector<double>{0.5, -2, 6, 32}));
  EXPECT_EQ(values(a / b), (std::vector<double>{2, -2, 1.5, 0.5}));
  EXPECT_EQ(values(10.0 - a), (std::vector<double>{9, 8, 7, 6}));
  EXPECT_EQ(values(12.0 / a), (std::vector<double>{12, 6, 4, 3}));
  EXPECT_EQ(values(pow(a, 2.0)), (std::vector<double>{1, 4, 9, 16}));
  EXPECT_EQ(values(-a), (std::vector<double>{-1, -2, -3, -4}));
}

TEST(Pointwise, TranscendentalsAgreeWithCmath) {
  std::vector<double> xs;
  for (int i = -400; i <= 400; ++i) xs.push_back(i * 0.05);
  Tensor x = T(xs);
  auto check = [&](const Tensor& got, double (*f)(double), double rtol) {
    auto g = values(got);
    for (size_t i = 0; i < xs.size(); ++i) {
      double w = static_cast<float>(f(static_cast<float>(xs[i])));
      EXPECT_NEAR(g[i], w, rtol * std::fabs(w) + 1e-7) << "x=" << xs[i];
    }
  };
  check(exp(x), [](double v) { return std::exp(v); }, 3e-7);
  check(tanh(x), [](double v) { return std::tanh(v); }, 3e-7);
  check(sigmoid(x), [](double v) { return 1 / (1 + std::exp(-v)); }, 3e-7);
  check(gelu(x), [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, 1e-6);
  Tensor pos = abs(x) + 1e-3;
  auto lg = values(log(pos)), px = values(pos);
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_NEAR(lg[i], std::log(px[i]), 3e-7 * std::fabs(std::log(px[i])) + 1e-7);
}

TEST(Pointwise, GeluBackwardIsTheDerivativeInOnePass) {
  // float32 (the vectorized form) against the derivative in float64, both forms, over both tails.
  std::vector<double> xs, gs;
  for (int i = -400; i <= 400; ++i) {
    xs.push_back(i * 0.05);
    gs.push_back(0.5 + 0.01 * (i % 7));
  }
  const double k = 0.7978845608028654, c = 0.044715;
  auto erf_form = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI); };
  auto tanh_form = [&](double x) {
    const double t = std::tanh(k * (x + c * x * x * x));
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * c * x * x);
  };
  for (const char* form : {"none", "tanh"}) {
    auto got = values(ops::gelu_backward(T(gs), T(xs), form));
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = gs[i] * (std::string(form) == "tanh" ? tanh_form(xs[i]) : erf_form(xs[i]));
      EXPECT_NEAR(got[i], want, 1e-6 * std::fabs(want) + 1e-7) << form << " x=" << xs[i];
    }
  }
  // The autograd gradient of gelu is this op.
  Tensor x = T(xs).requires_grad_(true);
  gelu(x).backward(T(gs));
  EXPECT_TRUE(all_close(x.grad(), ops::gelu_backward(T(gs), T(xs)), 0, 0));
  EXPECT_THROW(ops::gelu_backward(T(gs), T(xs), "fast"), Error);
}

TEST(Pointwise, SiluMatchesPyTorch) {
  // torch.nn.functional.silu in PyTorch 1.13, float64.
  const std::vector<double> want = {-0.14227761953270035, -0.1887703343990727, 0.0, 0.46773144051771626,
                                    3.928055160151634};
  Tensor x = T({-3.0, -0.5, 0.0, 0.7, 4.0}, kDouble);
  EXPECT_TRUE(all_close(silu(x), T(want, kDouble), 1e-15, 1e-15));
  EXPECT_TRUE(all_close(silu(x.to(kFloat)), T(want, kDouble), 1e-6, 1e-6));
}

TEST(Pointwise, SpecialValues) {
  Tensor x = T({NAN, INFINITY, -INFINITY, 0.0, -0.0, 100.0, -100.0, 1e-40});
  auto e = values(exp(x));
  EXPECT_TRUE(std::isnan(e[0]));
  EXPECT_EQ(e[1], INFINITY);
  EXPECT_EQ(e[2], 0.0);
  EXPECT_EQ(e[3], 1.0);
  EXPECT_EQ(e[5], INFINITY);
  EXPECT_EQ(e[6], std::exp(-100.0f));  // a float32 subnormal, not flushed to zero
  auto l = values(log(x));
  EXPECT_TRUE(std::isnan(l[0]));
  EXPECT_EQ(l[1], INFINITY);
  EXPECT_TRUE(std::isnan(l[2]));
  EXPECT_EQ(l[3], -INFINITY);
  EXPECT_NEAR(l[7], std::log(1e-40), 1e-4);  // subnormal input
  auto r = values(relu(x));
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_EQ(r[2], 0.0);
  auto t = values(tanh(x));
  EXPECT_EQ(t[5], 1.0);
  EXPECT_EQ(t[6], -1.0);
  EXPECT_TRUE(std::isnan(values(clamp(x, -1.0, 1.0))[0]));
}

TEST(Pointwise, TypePromotion) {
  Tensor i = arange(4);                 // int64
  Tensor f = T({1, 1, 1, 1});           // float32
  EXPECT_EQ((i + f).dtype(), kFloat);
  EXPECT_EQ((i + 1.5).dtype(), kFloat);
  EXPECT_EQ((i + 2).dtype(), kLong);
  EXPECT_EQ((f + scalar_tensor(1.0, kDouble)).dtype(), kFloat);  // 0-d does not outrank n-d
  EXPECT_EQ((i + scalar_tensor(1.0, kDouble)).dtype(), kDouble);  // ...unless of a higher category
  EXPECT_EQ((f.to(kBFloat16) + f.to(kHalf)).dtype(), kFloat);
  EXPECT_EQ((f.to(kBFloat16) * 2.0).dtype(), kBFloat16);
  EXPECT_EQ(div(i, 2).dtype(), kFloat);
  EXPECT_EQ(values(div(i, 2)), (std::vector<double>{0, 0.5, 1, 1.5}));
  EXPECT_EQ(exp(i).dtype(), kFloat);
  EXPECT_EQ(eq(i, f).dtype(), kBool);
  EXPECT_EQ(sum(eq(i, 1)).item<int64_t>(), 1);
  EXPECT_EQ(where(gt(i, 1), i, 1.5).dtype(), kFloat);
}

TEST(Pointwise, InPlaceKeepsStridesAndChecksCasts) {
  Tensor x = rand({2, 3, 4, 5}).to(MemoryFormat::ChannelsLast);
  Tensor before = x.clone();
  void* data = x.data();
  add_(x, rand({1, 3, 1, 1}) * 0 + 1);
  EXPECT_EQ(x.data(), data);
  EXPECT_EQ(x.strides(), IntArrayRef({60, 1, 15, 3}));
  EXPECT_TRUE(all_close(x, before + 1, 1e-6, 1e-6));
  Tensor ints = arange(4);
  EXPECT_THROW(add_(ints, T({0.5, 0.5, 0.5, 0.5})), Error);
  EXPECT_THROW(add_(ints, arange(8).reshape({2, 4})), Error);  // would need to grow
  Tensor f = T({1, 2});
  add_(f, scalar_tensor(1.0, kDouble));  // computed in float64, written back as float32
  EXPECT_EQ(values(f), (std::vector<double>{2, 3}));
  mul_(f, 3);
  EXPECT_EQ(values(f), (std::vector<double>{6, 9}));
}

TEST(Pointwise, OutKeepsItsStridesOrResizes) {
  Tensor a = rand({2, 3, 4, 5}), b = rand({2, 3, 4, 5});
  Tensor out = empty({2, 3, 4, 5}, MemoryFormat::ChannelsLast);
  add_out(out, a, b);
  EXPECT_EQ(out.strides(), IntArrayRef({60, 1, 15, 3}));
  EXPECT_TRUE(all_close(out, a + b, 0, 0));
  Tensor grow = empty({0});
  add_out(grow, a.to(MemoryFormat::ChannelsLast), b.to(MemoryFormat::ChannelsLast));
  EXPECT_EQ(grow.strides(), IntArrayRef({60, 1, 15, 3}));
}

TEST(Pointwise, WhereAddcmulMaskedFill) {
  Tensor c = tensor(std::vector<double>{1, 0, 1}, kBool);
  EXPECT_EQ(values(where(c, T({1, 2, 3}), T({-1, -2, -3}))), (std::vector<double>{1, -2, 3}));
  EXPECT_THROW(where(T({1, 0, 1}), T({1, 2, 3}), T({1, 2, 3})), Error);
  EXPECT_EQ(values(addcmul(T({1, 1}), T({2, 3}), T({4, 5}), 0.5)), (std::vector<double>{5, 8.5}));
  EXPECT_EQ(values(masked_fill(T({1, 2, 3}), c, 9)), (std::vector<double>{9, 2, 9}));
}

TEST(Pointwise, BroadcastErrorsNameBothShapes) {
  try {
    rand({2, 5}) + rand({2, 4});
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("[add]"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 5]"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 4]"), std::string::npos) << m;
  }
  EXPECT_THROW(neg(tensor(std::vector<double>{1}, kBool)), Error);
  EXPECT_THROW(clamp(rand({2}), std::nullopt, std::nullopt), Error);
  EXPECT_THROW(gelu(rand({2}), "fast"), Error);
}

TEST(Pointwise, HalfPrecisionComputesThroughFloat) {
  Tensor x = T({1.0, 2.0, 3.0}).to(kBFloat16);
  Tensor y = exp(x);
  EXPECT_EQ(y.dtype(), kBFloat16);
  EXPECT_TRUE(all_close(y, exp(T({1.0, 2.0, 3.0})), 8e-3, 0));
  Tensor h = T({0.1, 0.2}).to(kHalf);
  EXPECT_TRUE(all_close(h + h, T({0.2, 0.4}), 1e-3, 0));
}

TEST(Factory, CreationFunctions) {
  EXPECT_EQ(values(zeros({3})), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(values(ones({2}, kLong)), (std::vector<double>{1, 1}));
  EXPECT_EQ(values(full({2}, 2.5)), (std::vector<double>{2.5, 2.5}));
  EXPECT_EQ(values(arange(1, 2, 0.25)), (std::vector<double>{1, 1.25, 1.5, 1.75}));
  EXPECT_EQ(arange(5).dtype(), kLong);
  EXPECT_EQ(arange(0, 1, 0.5).dtype(), kFloat);
  EXPECT_THROW(arange(0, 5, 0), Error);
  EXPECT_THROW(arange(5, 0, 1), Error);
  EXPECT_THROW(empty({2, -1}), Error);
  Tensor f = full({2, 3, 1, 4}, 3.0, TensorOptions(kDouble).memory_format(MemoryFormat::ChannelsLast));
  EXPECT_EQ(f.strides(), IntArrayRef({12, 1, 12, 3}));
  EXPECT_EQ(f.dtype(), kDouble);
  EXPECT_EQ(full_like(f, 1).strides(), f.strides());
}

TEST(Conversion, DtypeRoundTripsPreserveFormat) {
  Tensor x = (rand({2, 3, 4, 5}) * 100).to(MemoryFormat::ChannelsLast);
  for (ScalarType t : {kDouble, kBFloat16, kHalf, kLong, kInt, kByte, kBool}) {
    Tensor y = x.to(t);
    EXPECT_EQ(y.dtype(), t);
    EXPECT_EQ(y.strides(), x.strides()) << to_string(t);
  }
  EXPECT_EQ(values(T({-1.7, 0.0, 2.9}).to(kLong)), (std::vector<double>{-1, 0, 2}));
  EXPECT_EQ(values(T({-1.7, 0.0, 2.9}).to(kBool)), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(values(T({300.0}).to(kBFloat16)), (std::vector<double>{300}));
  EXPECT_TRUE(x.to(kFloat).is_same(x));
  EXPECT_FALSE(x.to(kFloat, MemoryFormat::Preserve, true).is_same(x));
}

// Out-of-range floats to integers as PyTorch 1.13 on x86 (printed by /usr/bin/python3): int32 gets
// INT32_MIN for NaN, infinities and anything beyond int32 (not int64's low bits); uint8 goes
// through int64 and keeps the low byte.
TEST(Conversion, OutOfRangeFloatsToIntegersAsPyTorch) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<double> in = {nan, 3e9, 1e10, -3e9, inf, -inf, 2147483647.5, -2147483648.9, -7.9, 300.7};
  const double m = -2147483648.0;
  EXPECT_EQ(values(T(in, kDouble).to(kInt)), (std::vector<double>{m, m, m, m, m, m, 2147483647, m, -7, 300}));
  EXPECT_EQ(values(T(in, kDouble).to(kFloat).to(kInt)), (std::vector<double>{m, m, m, m, m, m, m, m, -7, 300}));
  EXPECT_EQ(values(T(in, kDouble).to(kByte)), (std::vector<double>{0, 0, 0, 0, 0, 0, 255, 0, 249, 44}));
  // Long enough for the vectorized loops, from every floating dtype.
  std::vector<double> many;
  for (int r = 0; r < 40; ++r) many.insert(many.end(), in.begin(), in.end());
  for (ScalarType t : {kDouble, kFloat, kBFloat16, kHalf}) {
    const std::vector<double> got = values(T(many, kDouble).to(t).to(kInt));
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(many[i]) || std::abs(many[i]) > 2.2e9) {
        EXPECT_EQ(got[i], m) << to_string(t) << " " << many[i];
      }
    }
  }
}

// clamp as PyTorch 1.13: an integer tensor with a floating bound computes in float32; with both
// bounds given a NaN one makes every element NaN, a single NaN bound changes nothing.
TEST(Pointwise, ClampPromotesAndFollowsNaNBounds) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor c = clamp(tensor(std::vector<int64_t>{7, -7}), 0.5, 2.5);
  EXPECT_EQ(c.dtype(), kFloat);
  EXPECT_EQ(values(c), (std::vector<double>{2.5, 0.5}));
  EXPECT_EQ(clamp(tensor(std::vector<int64_t>{7, -7}), 0, 2).dtype(), kLong);
  const Tensor x = T({-1.0, 0.5, 2.0});
  for (auto [lo, hi] : {std::pair{nan, 1.0}, std::pair{0.0, nan}, std::pair{nan, nan}})
    for (double v : values(clamp(x, lo, hi))) EXPECT_TRUE(std::isnan(v)) << lo << " " << hi;
  EXPECT_EQ(values(clamp(x, nan, std::nullopt)), values(x));
  EXPECT_EQ(values(clamp(x, std::nullopt, nan)), values(x));
  Tensor y = x.clone();
  clamp_(y, nan, 1.0);
  EXPECT_TRUE(std::isnan(values(y)[0]));
  EXPECT_THROW(clamp_(tensor(std::vector<int64_t>{7}), 0.5, 2.5), Error);
}

// Values from PyTorch 1.13: integer operands keep an integer dtype and wrap.
TEST(Pointwise, IntegerPowWrapsAsPyTorch) {
  auto ints = [](std::vector<int64_t> v, ScalarType t = kLong) { return tensor(v).to(t); };
  Tensor base = ints({-3, -1, 0, 1, 2, 3, -1, -1, 1});
  Tensor r = pow(base, ints({-1, -1, 2, -2, -1, 3, -3, -4, -5}));
  EXPECT_EQ(r.dtype(), kLong);
  EXPECT_EQ(values(r), (std::vector<double>{0, -1, 0, 1, 0, 27, -1, 1, 1}));
  Tensor u = pow(ints({249}, kByte), 2);
  EXPECT_EQ(u.dtype(), kByte);
  EXPECT_EQ(values(u), (std::vector<double>{49}));
  EXPECT_EQ(values(pow(ints({249}, kByte), ints({2}))), (std::vector<double>{62001}));
  EXPECT_EQ(values(pow(ints({3}, kInt), 100)), (std::vector<double>{-818408495}));
  EXPECT_EQ(values(pow(ints({7}, kByte), 5)), (std::vector<double>{167}));
  EXPECT_EQ(values(pow(ints({0}), 0)), (std::vector<double>{1}));
  const Tensor big = pow(ints({3}), 63);
  EXPECT_EQ(big.item().to_long(), -3237885987332494933LL);
  EXPECT_EQ(pow(ints({2}), 2.0).dtype(), kFloat);
  EXPECT_EQ(pow(T({2.0}), ints({3})).dtype(), kFloat);
  Tensor b = pow(tensor(std::vector<double>{1, 0}).to(kBool), 2);
  EXPECT_EQ(b.dtype(), kLong);
  EXPECT_EQ(values(b), (std::vector<double>{1, 0}));
  EXPECT_THROW(pow(ints({2}), -1), Error);
  EXPECT_THROW(pow(b.to(kBool), b.to(kBool)), Error);
  // Long enough for the vectorized loops: int32 products wrap as PyTorch's.
  std::vector<int64_t> xs;
  for (int64_t i = 0; i < 400; ++i) xs.push_back(i % 2 ? 50000 : -7);
  for (double v : values(pow(ints(xs, kInt), 2)))
    EXPECT_TRUE(v == -1794967296.0 || v == 49.0) << v;
}

}  // namespace
}  // namespace strider
