#pragma once
// C[m x n] (+)= A[m x k] B[k x n] over small bfloat16 panels with float32 accumulation, on
// `vdpbf16ps` (AVX512_BF16): each instruction adds a[2p] b[2p] + a[2p+1] b[2p+1] to every float
// lane, so B is kept in pairs of k-steps ("VNNI" layout, as oneDNN packs bfloat16 weights):
// element (p, j) at b[(p / 2) * 2 ldb + 2 j + p % 2], ldb the panel's columns. A is row-major
// (row stride lda, even). k is taken up to the next even number: the caller keeps A's column k
// zero and B's row k finite. n a multiple of 16. Only for CPUs with cpu_has(Isa::avx512_bf16);
// functions named *_avx512 are compiled for it whatever the file's level.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/isa_namespace.h"

namespace strider::kernels::cpu {
inline namespace STRIDER_ISA_NAMESPACE {

#define STRIDER_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

template <int R, int V>
STRIDER_AVX512_BF16 inline void dp_tile_avx512(int64_t pairs, const uint16_t* a, int64_t lda, const uint16_t* b,
                                               int64_t pair_stride, float* c, int64_t ldc, bool accumulate) {
  __m512 acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = accumulate ? _mm512_loadu_ps(c + r * ldc + 16 * v) : _mm512_setzero_ps();
  for (int64_t p = 0; p < pairs; ++p) {
    __m512bh bv[V];
    for (int v = 0; v < V; ++v) bv[v] = (__m512bh)_mm512_loadu_si512(b + p * pair_stride + 32 * v);
    for (int r = 0; r < R; ++r) {
      int32_t two;
      std::memcpy(&two, a + r * lda + 2 * p, sizeof two);
      const __m512bh av = (__m512bh)_mm512_set1_epi32(two);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
}

template <int R>
STRIDER_AVX512_BF16 inline void dp_rows_avx512(int64_t n, int64_t pairs, const uint16_t* a, int64_t lda,
                                               const uint16_t* b, int64_t pair_stride, float* c, int64_t ldc,
                                               bool accumulate) {
  int64_t j = 0;
  for (; j + 64 <= n; j += 64) dp_tile_avx512<R, 4>(pairs, a, lda, b + 2 * j, pair_stride, c + j, ldc, accumulate);
  switch ((n - j) / 16) {
    case 3: dp_tile_avx512<R, 3>(pairs, a, lda, b + 2 * j, pair_stride, c + j, ldc, accumulate); break;
    case 2: dp_tile_avx512<R, 2>(pairs, a, lda, b + 2 * j, pair_stride, c + j, ldc, accumulate); break;
    case 1: dp_tile_avx512<R, 1>(pairs, a, lda, b + 2 * j, pair_stride, c + j, ldc, accumulate); break;
    default: break;
  }
}

STRIDER_AVX512_BF16 inline void block_gemm_bf16_avx512(int64_t m, int64_t n, int64_t k, const uint16_t* a,
                                                       int64_t lda, const uint16_t* b, int64_t ldb, float* c,
                                                       int64_t ldc, bool accumulate) {
  const int64_t pairs = (k + 1) / 2, pair_stride = 2 * ldb;
  int64_t i = 0;
  for (; i + 4 <= m; i += 4)
    dp_rows_avx512<4>(n, pairs, a + i * lda, lda, b, pair_stride, c + i * ldc, ldc, accumulate);
  switch (m - i) {
    case 3: dp_rows_avx512<3>(n, pairs, a + i * lda, lda, b, pair_stride, c + i * ldc, ldc, accumulate); break;
    case 2: dp_rows_avx512<2>(n, pairs, a + i * lda, lda, b, pair_stride, c + i * ldc, ldc, accumulate); break;
    case 1: dp_rows_avx512<1>(n, pairs, a + i * lda, lda, b, pair_stride, c + i * ldc, ldc, accumulate); break;
    default: break;
  }
}

// Rows [0, m) x columns [0, n) of a float tile (row stride ldt, n a multiple of 16) rounded to
// bfloat16 (nearest even) as a row-major A panel.
STRIDER_AVX512_BF16 inline void round_rows_avx512(const float* t, int64_t ldt, int64_t m, int64_t n, uint16_t* out,
                                                  int64_t ldo) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; j += 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i * ldo + j),
                          (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(t + i * ldt + j)));
}

// Rows [0, k) x columns [0, n) of a float tile rounded to bfloat16 as a B panel in pairs of rows
// (layout above, ldb columns); an odd k's partner row is written as zeros.
STRIDER_AVX512_BF16 inline void round_row_pairs_avx512(const float* t, int64_t ldt, int64_t k, int64_t n,
                                                       uint16_t* out, int64_t ldb) {
  for (int64_t p = 0; p < k; p += 2) {
    const float* even = t + p * ldt;
    const float* odd = p + 1 < k ? even + ldt : nullptr;
    for (int64_t j = 0; j < n; j += 16) {
      const __m512i lo = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(even + j)));
      const __m512i hi = odd ? _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(odd + j)))
                             : _mm512_setzero_si512();
      _mm512_storeu_si512(out + p * ldb + 2 * j, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
  }
}

// Two rows of n bfloat16 (odd: null for zeros) as one pair-row of a B panel: even[j], odd[j] at
// out[2 j], out[2 j + 1].
STRIDER_AVX512_BF16 inline void interleave_row_pairs_avx512(const uint16_t* even, const uint16_t* odd, int64_t n,
                                                            uint16_t* out) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512i lo = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(even + j)));
    const __m512i hi = odd ? _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(odd + j)))
                           : _mm512_setzero_si512();
    _mm512_storeu_si512(out + 2 * j, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
  }
  for (; j < n; ++j) {
    out[2 * j] = even[j];
    out[2 * j + 1] = odd ? odd[j] : 0;
  }
}

// dst[d] = bfloat16(row[d] * scale) for d < n, rounded to nearest even.
STRIDER_AVX512_BF16 inline void round_scaled_avx512(const float* row, float scale, int64_t n, uint16_t* dst) {
  const __m512 s = _mm512_set1_ps(scale);
  for (int64_t d = 0; d < n; d += 16) {
    const __mmask16 m = n - d >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - d)) - 1);
    const __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, row + d), s);
    _mm256_mask_storeu_epi16(dst + d, m, (__m256i)_mm512_cvtneps_pbh(x));
  }
}

#undef STRIDER_AVX512_BF16

}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels::cpu
