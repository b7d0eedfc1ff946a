// Attention's bfloat16 block products (kernels/cpu/block_gemm_amx.h on AMX tiles,
// kernels/cpu/block_gemm_bf16.h on vdpbf16ps) against a float64 product of the same bfloat16
// values, over shapes that leave every remainder (rows past a multiple of 16, columns past 32,
// k-steps past 32, odd k), with and without accumulation; nothing outside C's m x n changes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/block_gemm_amx.h"
#include "kernels/cpu/block_gemm_bf16.h"
#include "kernels/cpu_isa.h"

namespace strider {
namespace {

namespace cpu = kernels::cpu;
using Gemm = void (*)(int64_t, int64_t, int64_t, const uint16_t*, int64_t, const uint16_t*, int64_t, float*, int64_t,
                      bool);

float bf16_value(uint16_t bits) {
  const uint32_t word = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &word, sizeof f);
  return f;
}

uint16_t bf16_bits(float f) {  // truncation: any bfloat16 value will do
  uint32_t word;
  std::memcpy(&word, &f, sizeof word);
  return static_cast<uint16_t>(word >> 16);
}

void check(Gemm gemm, int64_t m, int64_t n, int64_t k, bool accumulate, std::mt19937& rng) {
  SCOPED_TRACE(::testing::Message() << "m=" << m << " n=" << n << " k=" << k << (accumulate ? " accumulate" : ""));
  std::normal_distribution<float> normal;
  const int64_t ke = k + k % 2;  // k rounded up to even: A's column k zero, B's row k finite
  const int64_t lda = ke + 8, ldb = n + 16, ldc = n + 16, rows_c = m + 3;
  // At least one pair-row: with k = 0 the kernels still form pointers into B (never read).
  std::vector<uint16_t> a(m * lda, bf16_bits(7.0f)), b(std::max<int64_t>(ke / 2, 1) * 2 * ldb, bf16_bits(-3.0f));
  std::vector<double> av(m * ke, 0.0), bv(ke * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < ke; ++p) {
      a[i * lda + p] = p < k ? bf16_bits(normal(rng)) : 0;
      av[i * ke + p] = bf16_value(a[i * lda + p]);
    }
  for (int64_t p = 0; p < ke; ++p)
    for (int64_t j = 0; j < n; ++j) {
      const uint16_t x = p < k ? bf16_bits(normal(rng)) : bf16_bits(5.0f);
      b[(p / 2) * 2 * ldb + 2 * j + p % 2] = x;
      bv[p * n + j] = bf16_value(x);
    }
  std::vector<float> c(rows_c * ldc);
  for (float& x : c) x = normal(rng);
  const std::vector<float> before = c;
  gemm(m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc, accumulate);
  int64_t wrong = 0;
  for (int64_t i = 0; i < rows_c; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[i * ldc + j];
      if (i >= m || j >= n) {
        wrong += std::memcmp(&got, &before[i * ldc + j], sizeof got) != 0;
        continue;
      }
      double want = accumulate ? before[i * ldc + j] : 0.0, magnitude = std::fabs(want);
      for (int64_t p = 0; p < ke; ++p) {
        want += av[i * ke + p] * bv[p * n + j];
        magnitude += std::fabs(av[i * ke + p] * bv[p * n + j]);
      }
      // Float32 sums of exact products, in any order: within k ulps of the magnitudes added.
      wrong += !(std::fabs(got - want) <= 1.2e-7 * (ke + 2) * magnitude);
    }
  EXPECT_EQ(wrong, 0);
}

void check_shapes(Gemm gemm) {
  std::mt19937 rng(5);
  for (int64_t m : {1, 5, 16, 17, 31, 32, 33, 48, 64, 70})
    for (int64_t n : {16, 32, 48, 64, 80})
      for (int64_t k : {0, 1, 2, 15, 31, 32, 33, 48, 64, 65, 96})
        for (bool accumulate : {false, true}) check(gemm, m, n, k, accumulate, rng);
}

TEST(BlockGemm, AmxTilesMatchTheFloat64Product) {
  if (!kernels::cpu_has(kernels::Isa::amx_bf16)) GTEST_SKIP() << "no AMX tiles this process may use";
  const cpu::AmxTiles tiles;
  check_shapes(cpu::block_gemm_amx_avx512);
}

TEST(BlockGemm, DotProductsMatchTheFloat64Product) {
  if (!kernels::cpu_has(kernels::Isa::avx512_bf16)) GTEST_SKIP() << "no AVX512_BF16";
  check_shapes(cpu::block_gemm_bf16_avx512);
}

}  // namespace
}  // namespace strider
