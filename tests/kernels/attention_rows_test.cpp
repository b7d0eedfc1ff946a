// Attention's exponential (kernels/cpu/attention_rows.h): wherever it does not flush, the portable
// body gives vmath::exp's bits and the AVX-512 one its value within an ulp (its multiply-adds are
// fused); both flush exactly below kFlushBelow, where p 2^n would leave the normal range.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/attention_rows.h"
#include "kernels/cpu_isa.h"
#include "kernels/vec_math.h"

namespace strider {
namespace {

namespace rows = kernels::cpu::attention_rows;

__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl"))) std::vector<float> exp_avx512_of(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i + 16 <= x.size(); i += 16)
    _mm512_storeu_ps(out.data() + i, rows::exp_avx512(_mm512_loadu_ps(x.data() + i)));
  return out;
}

// Every 997th float from the flush threshold to the top of the range (2.2M), then the edges.
std::vector<float> inputs() {
  std::vector<float> x;
  const float top = 88.7228394f;
  for (uint32_t bits = 0; bits <= std::bit_cast<uint32_t>(-rows::kFlushBelow); bits += 997)
    x.push_back(-std::bit_cast<float>(bits));
  for (uint32_t bits = 0; bits <= std::bit_cast<uint32_t>(top); bits += 997) x.push_back(std::bit_cast<float>(bits));
  for (float v : {rows::kFlushBelow, 0.0f, -0.0f, top, -1e-30f, 1e-30f}) x.push_back(v);
  while (x.size() % 16) x.push_back(1.0f);
  return x;
}

TEST(AttentionRows, ExpIsVmathsWhereItDoesNotFlush) {
  const std::vector<float> x = inputs();
  const bool avx512 = kernels::cpu_has(kernels::Isa::avx512);
  const std::vector<float> vec = avx512 ? exp_avx512_of(x) : std::vector<float>();
  size_t differing = 0;
  int64_t most_ulps = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t want = std::bit_cast<uint32_t>(kernels::vmath::exp(x[i]));
    if (std::bit_cast<uint32_t>(rows::exp_flushed(x[i])) != want) ++differing;
    if (avx512) most_ulps = std::max<int64_t>(most_ulps, std::abs(std::bit_cast<uint32_t>(vec[i]) - want));
  }
  EXPECT_EQ(differing, 0u) << "of " << x.size() << " inputs";
  EXPECT_LE(most_ulps, 1);
}

TEST(AttentionRows, ExpFlushesBelowTheThresholdAndKeepsTheSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float below = std::nextafter(rows::kFlushBelow, -inf);
  std::vector<float> x = {below, -87.5f, -103.0f, -200.0f, -inf, inf, 89.0f, std::nanf(""), rows::kFlushBelow};
  x.resize(16, 0.0f);
  const std::vector<float> want = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, inf, inf};
  std::vector<float> vec = kernels::cpu_has(kernels::Isa::avx512) ? exp_avx512_of(x) : std::vector<float>();
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "exp(" << x[i] << ")");
    EXPECT_EQ(rows::exp_flushed(x[i]), want[i]);
    if (!vec.empty()) EXPECT_EQ(vec[i], want[i]);
  }
  EXPECT_TRUE(std::isnan(rows::exp_flushed(x[7])));
  EXPECT_GT(rows::exp_flushed(x[8]), std::numeric_limits<float>::min());  // the threshold itself: normal
  if (!vec.empty()) {
    EXPECT_TRUE(std::isnan(vec[7]));
    EXPECT_GT(vec[8], std::numeric_limits<float>::min());
  }
}

}  // namespace
}  // namespace strider
