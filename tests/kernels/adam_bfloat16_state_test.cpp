// The fused Adam step with bfloat16 moments (kernels/adam.h): every instruction set gives the
// bits of a scalar model built from the exposed rounding pieces (ctest runs this binary capped at
// AVX2 and at the baseline too), and stochastic rounding is unbiased where rounding to nearest
// would not move at all.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/adam.h"

namespace strider {
namespace {

kernels::AdamStep step_constants(int64_t first_element) {
  return {.param_scale = 1.0f - 1e-3f * 0.01f, .grad_decay = 0.0f, .beta1 = 0.9f, .one_minus_beta1 = 0.1f,
          .beta2 = 0.999f, .one_minus_beta2 = 0.001f, .bias_correction2_sqrt = std::sqrt(1.0f - 0.999f * 0.999f),
          .eps = 1e-8f, .step = -1e-3f / (1.0f - 0.9f * 0.9f), .round_key_exp_avg = 0x1234567u,
          .round_key_exp_avg_sq = 0x89abcdefu, .first_element = first_element};
}

uint16_t bits_of(float x) { return static_cast<uint16_t>(std::bit_cast<uint32_t>(x) >> 16); }

TEST(AdamBfloat16State, EveryInstructionSetGivesTheScalarModelsBits) {
  // Lengths with vector tails, and a first element just below 2^32 so a block straddles it.
  for (int64_t first : {int64_t{0}, int64_t{7}, (int64_t{1} << 32) - 21}) {
    const int64_t n = 16 * 70 + 13;
    manual_seed(3);
    Tensor p = randn({n}), g = randn({n}) * 0.1;
    Tensor m = (randn({n}) * 0.05).to(kBFloat16), v = (rand({n}) * 0.01).to(kBFloat16);
    m.data_ptr<BFloat16>()[5] = BFloat16(std::nanf(""));  // NaN stays a quiet NaN
    // A first moment past bfloat16's largest (3.39e38) after the update stays finite.
    m.data_ptr<BFloat16>()[7].bits = 0x7f7f;
    g.data_ptr<float>()[7] = 3.4e38f;
    m.data_ptr<BFloat16>()[9].bits = 0xff7f;
    g.data_ptr<float>()[9] = -3.4e38f;
    const Tensor p0 = p.clone(), m0 = m.clone(), v0 = v.clone();
    const kernels::AdamStep s = step_constants(first);
    ASSERT_EQ(kernels::adam_step_rejects(p, g, m, v), "");
    kernels::adam_step(p, g, m, v, s);
    for (int64_t i = 0; i < n; ++i) {
      float pf = p0.data_ptr<float>()[i], gf = g.data_ptr<float>()[i];
      float mf = m0.data_ptr<BFloat16>()[i], vf = v0.data_ptr<BFloat16>()[i];
      pf = pf * s.param_scale;
      mf = std::fma(s.one_minus_beta1, gf, mf * s.beta1);
      vf = std::fma(s.one_minus_beta2, gf * gf, vf * s.beta2);
      pf = std::fma(s.step, mf / (std::sqrt(vf) / s.bias_correction2_sqrt + s.eps), pf);
      const uint16_t want_m =
          kernels::round_to_bfloat16_stochastically(mf, kernels::stochastic_rounding_bits(s.round_key_exp_avg, first + i));
      const uint16_t want_v = kernels::round_to_bfloat16_stochastically(
          vf, kernels::stochastic_rounding_bits(s.round_key_exp_avg_sq, first + i));
      ASSERT_EQ(m.data_ptr<BFloat16>()[i].bits, want_m) << "exp_avg " << i << " first " << first;
      ASSERT_EQ(v.data_ptr<BFloat16>()[i].bits, want_v) << "exp_avg_sq " << i << " first " << first;
      if (std::isnan(pf)) {
        ASSERT_TRUE(std::isnan(p.data_ptr<float>()[i])) << "param " << i;
        continue;
      }
      ASSERT_EQ(std::memcmp(&pf, p.data_ptr<float>() + i, 4), 0) << "param " << i << " first " << first;
    }
    EXPECT_EQ(m.data_ptr<BFloat16>()[5].bits, 0x7fc0);
    EXPECT_EQ(m.data_ptr<BFloat16>()[7].bits, 0x7f7f);
    EXPECT_EQ(m.data_ptr<BFloat16>()[9].bits, 0xff7f);
  }
}

TEST(AdamBfloat16State, StochasticRoundingIsUnbiasedAndExactValuesStay) {
  // 1 + 2^-10 lies 1/8 of the way from bfloat16's 1 to 1 + 2^-7.
  const float x = 1.0f + 0x1p-10f;
  int up = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const uint16_t r = kernels::round_to_bfloat16_stochastically(x, kernels::stochastic_rounding_bits(99, i));
    ASSERT_TRUE(r == bits_of(1.0f) || r == bits_of(1.0f + 0x1p-7f)) << r;
    up += r != bits_of(1.0f);
  }
  EXPECT_NEAR(up / double(n), 0.125, 0.005);
  // Negative values round in magnitude the same way; exact values, zero and infinity stay.
  for (float e : {1.5f, -2.0f, 0.0f, -0.0f, INFINITY, -INFINITY})
    for (int i = 0; i < 100; ++i)
      EXPECT_EQ(kernels::round_to_bfloat16_stochastically(e, kernels::stochastic_rounding_bits(5, i)), bits_of(e)) << e;
  // Past bfloat16's largest magnitude a finite value stays at it, whatever the bits.
  for (float big : {3.4e38f, std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()})
    for (uint32_t bits : {0u, 0x8000u, 0xffffu})
      EXPECT_EQ(kernels::round_to_bfloat16_stochastically(big, bits), big > 0 ? 0x7f7f : 0xff7f) << big << " " << bits;
  // Elements 2^32 apart get different streams.
  EXPECT_NE(kernels::stochastic_rounding_bits(7, 3), kernels::stochastic_rounding_bits(7, (int64_t{1} << 32) + 3));
}

// An element's bits do not depend on the block it is stepped in: the tail of a tensor stepped on
// its own, with its first element's index, gets what it got as part of the whole.
TEST(AdamBfloat16State, AnElementsBitsDoNotDependOnItsBlock) {
  const int64_t n = 1000, k = 37;
  manual_seed(8);
  const Tensor p0 = randn({n}), g = randn({n});
  const Tensor m0 = (randn({n}) * 0.1).to(kBFloat16), v0 = (rand({n}) * 0.1).to(kBFloat16);
  const kernels::AdamStep s = step_constants(123456);
  Tensor p = p0.clone(), m = m0.clone(), v = v0.clone();
  kernels::adam_step(p, g, m, v, s);
  Tensor pt = p0.narrow(0, k, n - k).clone(), mt = m0.narrow(0, k, n - k).clone(), vt = v0.narrow(0, k, n - k).clone();
  kernels::AdamStep st = s;
  st.first_element += k;
  kernels::adam_step(pt, g.narrow(0, k, n - k).contiguous(), mt, vt, st);
  EXPECT_EQ(std::memcmp(pt.data(), p.narrow(0, k, n - k).contiguous().data(), (n - k) * 4), 0);
  EXPECT_EQ(std::memcmp(mt.data(), m.narrow(0, k, n - k).contiguous().data(), (n - k) * 2), 0);
  EXPECT_EQ(std::memcmp(vt.data(), v.narrow(0, k, n - k).contiguous().data(), (n - k) * 2), 0);
}

TEST(AdamBfloat16State, MixedMomentDtypesAndOverlapsAreRejected) {
  Tensor p = zeros({64}), g = zeros({64}), m = zeros({64}, kBFloat16), v = zeros({64});
  EXPECT_NE(kernels::adam_step_rejects(p, g, m, v), "");
  v = zeros({64}, kBFloat16);
  EXPECT_EQ(kernels::adam_step_rejects(p, g, m, v), "");
  // bfloat16 moments are 2 bytes an element: a second moment sharing the first's storage overlaps.
  Tensor both = zeros({128}, kBFloat16);
  EXPECT_NE(kernels::adam_step_rejects(p, g, both.narrow(0, 0, 64), both.narrow(0, 32, 64)), "");
  EXPECT_EQ(kernels::adam_step_rejects(p, g, both.narrow(0, 0, 64), both.narrow(0, 64, 64)), "");
  EXPECT_NE(kernels::adam_step_rejects(zeros({64}, kBFloat16), g, m, v), "");
}

}  // namespace
}  // namespace strider
