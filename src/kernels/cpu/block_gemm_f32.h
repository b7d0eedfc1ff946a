#pragma once
// C[m x n] (+)= A[m x k] B[k x n] over small float panels (attention's blocks, kernels/attention.h):
// A row-major (row stride lda), B row-major (ldb), n a multiple of 16. One register-tiled body per
// instruction set, chosen at run time (kernels/cpu_isa.h); functions named *_avx2 / *_avx512 are
// compiled for that level whatever the file's level (scripts/check-isa-objects.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu_isa.h"
#include "kernels/isa_namespace.h"

namespace strider::kernels::cpu {
inline namespace STRIDER_ISA_NAMESPACE {

#define STRIDER_AVX512 __attribute__((target("avx512f")))
template <int R, int V>
STRIDER_AVX512 inline void f32_tile_avx512(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                                           float* c, int64_t ldc, bool accumulate) {
  __m512 acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = accumulate ? _mm512_loadu_ps(c + r * ldc + 16 * v) : _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    __m512 bv[V];
    for (int v = 0; v < V; ++v) bv[v] = _mm512_loadu_ps(b + p * ldb + 16 * v);
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + p]);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
}

template <int R>
STRIDER_AVX512 inline void f32_rows_avx512(int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                                           int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  int64_t j = 0;
  for (; j + 64 <= n; j += 64) f32_tile_avx512<R, 4>(k, a, lda, b + j, ldb, c + j, ldc, accumulate);
  switch ((n - j) / 16) {
    case 3: f32_tile_avx512<R, 3>(k, a, lda, b + j, ldb, c + j, ldc, accumulate); break;
    case 2: f32_tile_avx512<R, 2>(k, a, lda, b + j, ldb, c + j, ldc, accumulate); break;
    case 1: f32_tile_avx512<R, 1>(k, a, lda, b + j, ldb, c + j, ldc, accumulate); break;
    default: break;
  }
}

// Six rows at a time (24 accumulators, four B vectors, a broadcast): each pass over the rows reads
// the B panel again, from L2 in attention's backward; 8% faster than four there (docs/benchmarks.md).
STRIDER_AVX512 inline void f32_gemm_avx512(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                                           int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  int64_t i = 0;
  for (; i + 6 <= m; i += 6) f32_rows_avx512<6>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate);
  switch (m - i) {
    case 5: f32_rows_avx512<5>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate); break;
    case 4: f32_rows_avx512<4>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate); break;
    case 3: f32_rows_avx512<3>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate); break;
    case 2: f32_rows_avx512<2>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate); break;
    case 1: f32_rows_avx512<1>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate); break;
    default: break;
  }
}
#undef STRIDER_AVX512

// AVX2 has 16 registers of 8 floats: tiles of R rows x 16 columns (2R accumulators).
#define STRIDER_AVX2 __attribute__((target("avx2,fma")))
template <int R>
STRIDER_AVX2 inline void f32_tile_avx2(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                                       int64_t ldc, bool accumulate) {
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < 2; ++v) acc[r][v] = accumulate ? _mm256_loadu_ps(c + r * ldc + 8 * v) : _mm256_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    const __m256 b0 = _mm256_loadu_ps(b + p * ldb), b1 = _mm256_loadu_ps(b + p * ldb + 8);
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_set1_ps(a[r * lda + p]);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < 2; ++v) _mm256_storeu_ps(c + r * ldc + 8 * v, acc[r][v]);
}

template <int R>
STRIDER_AVX2 inline void f32_rows_avx2(int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                                       float* c, int64_t ldc, bool accumulate) {
  for (int64_t j = 0; j < n; j += 16) f32_tile_avx2<R>(k, a, lda, b + j, ldb, c + j, ldc, accumulate);
}

STRIDER_AVX2 inline void f32_gemm_avx2(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                                       int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) f32_rows_avx2<4>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate);
  switch (m - i) {
    case 3: f32_rows_avx2<3>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate); break;
    case 2: f32_rows_avx2<2>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate); break;
    case 1: f32_rows_avx2<1>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate); break;
    default: break;
  }
}
#undef STRIDER_AVX2

inline void f32_gemm_scalar(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                            float* c, int64_t ldc, bool accumulate) {
  for (int64_t i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
    if (!accumulate)
      for (int64_t j = 0; j < n; ++j) ci[j] = 0;
    for (int64_t p = 0; p < k; ++p) {
      const float ap = a[i * lda + p];
      const float* bp = b + p * ldb;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) ci[j] += ap * bp[j];
    }
  }
}

using BlockGemmF32 = void (*)(int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t,
                              bool);

inline void block_gemm_f32(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                           float* c, int64_t ldc, bool accumulate) {
  static const BlockGemmF32 chosen =
      cpu_has(Isa::avx512) ? f32_gemm_avx512 : cpu_has(Isa::avx2) ? f32_gemm_avx2 : f32_gemm_scalar;
  chosen(m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels::cpu
