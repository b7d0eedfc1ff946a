// nn::init's truncated normal and orthogonal fills: the orthogonal matrix against PyTorch 1.13's
// for the same normal draws (the QR is unique once R's diagonal signs are fixed), the truncated
// normal's bounds and moments, both through deferred initialization, and their refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <strider/strider.h>

#include "nn/init_math.h"
#include "support/compare.h"

namespace strider {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

Tensor identity(int64_t n, double scale) {
  Tensor out = zeros({n, n}, kDouble);
  for (int64_t i = 0; i < n; ++i) static_cast<double*>(out.data())[i * n + i] = scale;
  return out;
}

// t viewed as rows x cols times its transpose (the smaller side), which is gain^2 I.
Tensor gram(const Tensor& t) {
  Tensor m = t.to(kDouble).contiguous().reshape({t.size(0), -1});
  return m.size(0) <= m.size(1) ? matmul(m, m.t()) : matmul(m.t(), m);
}

TEST(Init, ErfinvInvertsErf) {
  // torch.erfinv of 0.5, -0.9, 1e-10 in float64; of 0.999999 mpmath's (30 digits), where torch's
  // is 7.7e-12 off (3.458910737283175).
  EXPECT_NEAR(nn::init::detail::erfinv(0.5), 0.4769362762044699, 1e-15);
  EXPECT_NEAR(nn::init::detail::erfinv(-0.9), -1.1630871536766743, 1e-15);
  EXPECT_NEAR(nn::init::detail::erfinv(0.999999), 3.4589107372754987775, 1e-14);
  EXPECT_NEAR(nn::init::detail::erfinv(1e-10), 8.862269254527581e-11, 1e-24);
  for (double y = -0.9999; y < 1; y += 0.0137) EXPECT_NEAR(std::erf(nn::init::detail::erfinv(y)), y, 1e-15) << y;
  EXPECT_TRUE(std::isinf(nn::init::detail::erfinv(1.0)));
}

TEST(Init, OrthogonalIsPyTorchsQForTheSameDraws) {
  const std::vector<double> a = {0.5, -1.25, 2.0, 1.5, 0.25, -0.75, -2.0, 1.0, 0.5, 0.3, -0.6, 1.1};
  // PyTorch 1.13: q, r = torch.linalg.qr(flat); q *= diag(r).sign() (transposed when wide), * gain.
  const std::vector<double> tall = {0.194772346782905,   -0.7372948739226689, 0.4174436416671989,  0.5843170403487149,
                                    0.5556615336754325,  0.5816125647296588,  -0.7790893871316198, 0.18163334024723637,
                                    0.595293308318197,   0.11686340806974298, -0.3385939435244723, 0.36481982902768884};
  const std::vector<double> wide = {0.38954469356581,    1.1686340806974298, -1.5581787742632396, 0.23372681613948595,
                                    -1.4745897478453378, 1.111323067350865,  0.36326668049447275, -0.6771878870489446,
                                    0.8348872833343978,  1.1632251294593177, 1.190586616636394,   0.7296396580553777};
  const auto got_tall = nn::init::detail::orthogonal_from_normal(a, 4, 3, 1.0);
  std::vector<double> at(12);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) at[r * 4 + c] = a[c * 3 + r];
  const auto got_wide = nn::init::detail::orthogonal_from_normal(at, 3, 4, 2.0);
  for (size_t i = 0; i < 12; ++i) {
    EXPECT_NEAR(got_tall[i], tall[i], 1e-14) << i;
    EXPECT_NEAR(got_wide[i], wide[i], 1e-14) << i;
  }
}

TEST(Init, OrthogonalGivesOrthonormalRowsOrColumnsOfAnyShape) {
  manual_seed(2);
  for (DimVector shape : {DimVector{3, 5}, DimVector{5, 3}, DimVector{8, 2, 3, 3}, DimVector{64, 64}}) {
    Tensor w = empty(shape);
    nn::init::orthogonal_(w, 1.5);
    const int64_t n = std::min(w.size(0), w.numel() / w.size(0));
    EXPECT_TRUE(testing::all_close(gram(w), identity(n, 2.25), 0, 1e-5)) << IntArrayRef(shape);
  }
  Tensor cl = empty({4, 2, 3, 3}).contiguous(MemoryFormat::ChannelsLast);
  nn::init::orthogonal_(cl);
  EXPECT_TRUE(cl.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(testing::all_close(gram(cl), identity(4, 1.0), 0, 1e-5));
  EXPECT_NO_THROW(nn::init::orthogonal_(empty({0, 3})));  // PyTorch: a no-op
  EXPECT_NE(error_of([] { nn::init::orthogonal_(empty({4})); }).find("2 or more dimensions"), std::string::npos);
}

TEST(Init, TruncatedNormalStaysInItsBoundsWithTheTruncatedMoments) {
  manual_seed(3);
  Tensor t = empty({200000}, kDouble);
  nn::init::trunc_normal_(t);  // N(0, 1) on [-2, 2]
  EXPECT_GE(min(t).item<double>(), -2.0);
  EXPECT_LE(max(t).item<double>(), 2.0);
  EXPECT_NEAR(t.mean().item<double>(), 0.0, 0.01);
  // Variance of N(0, 1) truncated to [-2, 2]: 1 - 2 * 2 phi(2) / (2 Phi(2) - 1) = 0.77374.
  EXPECT_NEAR(mul(t, t).mean().item<double>(), 0.77374, 0.01);
  Tensor f = empty({1000});
  nn::init::trunc_normal_(f, 1.0, 0.5, 0.9, 1.2);
  EXPECT_GE(min(f).item<float>(), 0.9f);
  EXPECT_LE(max(f).item<float>(), 1.2f);
  Tensor fixed = empty({3});
  nn::init::trunc_normal_(fixed, 0.5, 0.0);
  EXPECT_TRUE(testing::all_close(fixed, full({3}, 0.5), 0, 0));
  EXPECT_NE(error_of([&] { nn::init::trunc_normal_(f, 0, 1, 2, -2); }).find("a <= b"), std::string::npos);
  EXPECT_NE(error_of([&] { nn::init::trunc_normal_(empty({2}, kLong)); }).find("floating-point"), std::string::npos);
}

struct TwoLayers : nn::Module {
  TwoLayers() : nn::Module("TwoLayers") {
    nn::init::orthogonal_(register_parameter("w", empty({6, 10})), 2.0);
    nn::init::trunc_normal_(register_parameter("t", empty({5, 7})), 0.0, 1.0, -0.5, 0.5);
  }
};

TEST(Init, DeferredTruncatedNormalAndOrthogonalDrawAnyRowsAsTheWhole) {
  std::shared_ptr<TwoLayers> m;
  {
    nn::DeferredInit deferred(4);
    m = std::make_shared<TwoLayers>();
  }
  const Tensor w = m->param("w"), t = m->param("t");
  const Tensor whole_w = nn::materialize_tensor(w, "w"), whole_t = nn::materialize_tensor(t, "t");
  EXPECT_TRUE(testing::all_close(gram(whole_w), identity(6, 4.0), 0, 1e-5));
  EXPECT_LE(max(whole_t.abs()).item<float>(), 0.5f);
  Tensor rows = empty({2, 10});
  nn::materialize_rows(w, "w", 3, rows);
  EXPECT_TRUE(testing::all_close(rows, whole_w.narrow(0, 3, 2), 0, 0));
  Tensor trows = empty({3, 7});
  nn::materialize_rows(t, "t", 1, trows);
  EXPECT_TRUE(testing::all_close(trows, whole_t.narrow(0, 1, 3), 0, 0));
}

// One recipe draws a whole stand-in: an init of its rows (an LSTM's gates) is refused, where it
// would have set the whole parameter.
TEST(Init, AnInitOfPartOfADeferredParameterIsRefused) {
  nn::DeferredInit deferred(5);
  auto lin = std::make_shared<nn::Linear>(4, 8);
  const Tensor w = lin->param("weight");
  const std::string e = error_of([&] { nn::init::orthogonal_(w.narrow(0, 0, 4)); });
  EXPECT_NE(e.find("part of a deferred parameter"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { nn::init::constant_(w.narrow(0, 4, 4), 1.0); }).find("materialize the module first"),
            std::string::npos);
  EXPECT_NO_THROW(nn::init::orthogonal_(w));
  EXPECT_NO_THROW(nn::init::normal_(w.t()));  // the whole tensor, seen transposed
  // An orthogonal matrix depends on the shape it is drawn in: only the parameter's own.
  EXPECT_NE(error_of([&] { nn::init::orthogonal_(w.view({4, 8})); }).find("orthogonal_ of a deferred parameter seen as"),
            std::string::npos);
}

}  // namespace
}  // namespace strider
