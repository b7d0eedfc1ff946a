// vmath's GELU pieces against double precision over their whole ranges: the series that stands in
// for exp over erfc's fitted exponent, and gelu's gradient, whose CDF and PDF share one exp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kernels/vec_math.h"

namespace strider {
namespace {

namespace vmath = kernels::vmath;

TEST(VecMath, ExpOfErfcFitIsExpOverTheFitsRange) {
  double worst = 0;
  for (int i = 0; i <= 200000; ++i) {
    const float p = -1.2656f * static_cast<float>(i) / 200000.0f;
    worst = std::max(worst, std::fabs(vmath::exp_of_erfc_fit(p) / std::exp(static_cast<double>(p)) - 1.0));
  }
  EXPECT_LT(worst, 3e-7);  // a few float roundings; the truncation is under 6e-9
  // ... and P(t) stays in that range for every t in [0, 1].
  for (int i = 0; i <= 1000; ++i) {
    const float p = vmath::erfc_fit_exponent(static_cast<float>(i) / 1000.0f);
    EXPECT_GE(p, -1.2656f);
    EXPECT_LE(p, 1e-6f);
  }
}

// Error relative to the sum of the magnitudes of the gradient's two terms (the gradient itself
// crosses zero near x = -0.75, where a relative error means nothing).
TEST(VecMath, GeluBackwardIsAccurateOverItsWholeRange) {
  double worst = 0, at = 0;
  for (int i = 0; i <= 2000000; ++i) {
    const float x = -14.0f + 28.0f * static_cast<float>(i) / 2000000.0f;
    const double xd = x, cdf = 0.5 * std::erfc(-xd / std::sqrt(2.0));
    const double pdf_term = xd * std::exp(-0.5 * xd * xd) * 0.3989422804014327;
    const double scale = cdf + std::fabs(pdf_term);
    if (scale < 1e-30) continue;
    const double err = std::fabs(vmath::gelu_backward(1.0f, x) - (cdf + pdf_term)) / scale;
    if (err > worst) worst = err, at = x;
  }
  EXPECT_LT(worst, 6e-6) << "at x = " << at;  // 3.9e-6 with two exps, as with one
  EXPECT_EQ(vmath::gelu_backward(2.0f, 0.0f), 1.0f);
  EXPECT_EQ(vmath::gelu_backward(1.0f, -1e30f), 0.0f);
  EXPECT_EQ(vmath::gelu_backward(1.0f, 1e30f), 1.0f);
  EXPECT_TRUE(std::isnan(vmath::gelu_backward(1.0f, NAN)));
}

}  // namespace
}  // namespace strider
