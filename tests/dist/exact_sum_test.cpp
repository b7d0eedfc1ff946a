// The deterministic mode's exact sums: any partition of the same values over "ranks" and any
// order gives the same limbs and the same floats, close to the true sum.
#include <gtest/gtest.h>
#include <strider/dist/exact_sum.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <random>
#include <vector>

namespace strider {
namespace {

// Values spanning 40 binary orders of magnitude, both signs, with exact zeros.
std::vector<float> mixed_values(int count, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exp(-30, 10);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = gen() % 7 == 0 ? 0.0f : std::ldexp(mant(gen), exp(gen));
  return v;
}

TEST(ExactSum, EveryPartitionAndOrderGivesTheSameBits) {
  const int terms = 12, n = 257;  // 12 micro-batch gradients of 257 elements
  std::vector<std::vector<float>> grads;
  for (int t = 0; t < terms; ++t) grads.push_back(mixed_values(n, 100 + t));
  std::vector<float> reference;
  for (int world : {1, 2, 3, 4, 6, 12}) {
    // Each "rank" accumulates its contiguous block of terms, then the ranks' limbs are summed
    // limb-wise in reverse rank order (an all-reduce's order is not ours to choose).
    std::vector<int64_t> hi(n, 0), lo(n, 0);
    for (int r = world; r-- > 0;) {
      std::vector<int64_t> rh(n, 0), rl(n, 0);
      for (int t = r * terms / world; t < (r + 1) * terms / world; ++t)
        EXPECT_EQ(dist::add_to_limbs(grads[t].data(), n, rh.data(), rl.data()), 0);
      for (int i = 0; i < n; ++i) hi[i] += rh[i], lo[i] += rl[i];
    }
    dist::normalize_limbs(hi.data(), lo.data(), n);
    std::vector<float> out(n);
    dist::limbs_to_float(hi.data(), lo.data(), n, terms, out.data());
    if (reference.empty()) reference = out;
    // The one-pass sum of all terms (what a rank does with every rank's contribution) agrees.
    std::vector<float> rows;
    for (const auto& g : grads) rows.insert(rows.end(), g.begin(), g.end());
    std::vector<int64_t> one_hi(n), one_lo(n);
    EXPECT_EQ(dist::sum_to_limbs(rows.data(), n, terms, n, one_hi.data(), one_lo.data()), 0);
    EXPECT_EQ(one_hi, hi);
    EXPECT_EQ(one_lo, lo);
    for (int i = 0; i < n; ++i) ASSERT_EQ(std::memcmp(&out[i], &reference[i], sizeof(float)), 0) << "world " << world << " element " << i;
  }
  for (int i = 0; i < n; ++i) {
    long double exact = 0;
    for (int t = 0; t < terms; ++t) exact += grads[t][i];
    exact /= terms;
    EXPECT_NEAR(reference[i], static_cast<double>(exact), std::fabs(static_cast<double>(exact)) * 1.2e-7 + 1e-20) << i;
  }
}

// sum_to_float (one pass, per row count) gives limbs_to_float's bits of sum_to_limbs.
TEST(ExactSum, OnePassFloatSumMatchesTheLimbs) {
  const int n = 3001;
  for (int terms = 1; terms <= 12; ++terms) {
    std::vector<float> rows;
    for (int t = 0; t < terms; ++t) {
      auto r = mixed_values(n, 300 + t);
      rows.insert(rows.end(), r.begin(), r.end());
    }
    std::vector<int64_t> hi(n), lo(n);
    std::vector<float> via_limbs(n), direct(n);
    EXPECT_EQ(dist::sum_to_limbs(rows.data(), n, terms, n, hi.data(), lo.data()), 0);
    dist::limbs_to_float(hi.data(), lo.data(), n, 12.0, via_limbs.data());
    EXPECT_EQ(dist::sum_to_float(rows.data(), n, terms, n, 12.0, direct.data()), 0);
    EXPECT_EQ(std::memcmp(direct.data(), via_limbs.data(), n * sizeof(float)), 0) << terms << " terms";
  }
}

TEST(ExactSum, OutOfRangeValuesAreCountedNotAdded) {
  const float v[4] = {1.0f, NAN, INFINITY, 5e9f};
  int64_t hi[4] = {}, lo[4] = {};
  EXPECT_EQ(dist::add_to_limbs(v, 4, hi, lo), 3);
  float out[4];
  dist::limbs_to_float(hi, lo, 4, 1.0, out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 0.0f);
  // The edge of the range: the largest float below 2^29 (either sign) is carried exactly.
  const float edge[3] = {std::nextafter(0x1p29f, 0.0f), -std::nextafter(0x1p29f, 0.0f), 0x1p29f};
  int64_t ehi[3] = {}, elo[3] = {};
  EXPECT_EQ(dist::add_to_limbs(edge, 3, ehi, elo), 1);
  dist::limbs_to_float(ehi, elo, 3, 1.0, out);
  EXPECT_EQ(out[0], edge[0]);
  EXPECT_EQ(out[1], edge[1]);
}

TEST(ExactSum, SquareSumsAgreeAcrossPartitions) {
  const std::vector<float> v = mixed_values(1000, 7);
  double first = -1;
  for (int world : {1, 2, 3, 4}) {
    dist::ExactSum total;
    for (int r = 0; r < world; ++r) {
      dist::ExactSum part;
      const int64_t begin = r * 1000 / world, end = (r + 1) * 1000 / world;
      part.add_squares(v.data() + begin, end - begin);
      part.normalize();
      for (int k = 0; k < dist::ExactSum::kLimbs; ++k) total.limbs()[k] += part.limbs()[k];
    }
    total.normalize();
    EXPECT_FALSE(total.overflowed());
    if (first < 0) first = total.value();
    EXPECT_EQ(total.value(), first) << "world " << world;
  }
  long double exact = 0;
  for (float x : v) exact += static_cast<long double>(x) * x;
  EXPECT_NEAR(first, static_cast<double>(exact), static_cast<double>(exact) * 1e-15);
}

}  // namespace
}  // namespace strider
