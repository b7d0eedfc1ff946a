#pragma once
// C[m x n] (+)= A[m x k] B[k x n] over the bfloat16 panels of block_gemm_bf16.h (A row-major, B in
// pairs of k-steps, n a multiple of 16) on Intel's AMX tiles: one tdpbf16ps multiplies a 16 x 32
// A tile by a 32 x 16 B tile (16 rows of pairs) into a 16 x 16 float32 tile. The panels' layout is
// the tiles' own, so they load as they are. Rows past the last multiple of 16 and k-steps past the
// last multiple of 32 take vdpbf16ps (every AMX-BF16 CPU has AVX512_BF16). Only for CPUs with
// cpu_has(Isa::amx_bf16), which includes Linux's leave to use the tiles, and only between the
// construction and destruction of an AmxTiles on the calling thread. Functions named *_avx512 are
// compiled for that level whatever the file's level (scripts/check-isa-objects.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/block_gemm_bf16.h"
#include "kernels/isa_namespace.h"

namespace strider::kernels::cpu {
inline namespace STRIDER_ISA_NAMESPACE {

#define STRIDER_AMX_AVX512 __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16")))
#define STRIDER_AMX_TILE __attribute__((target("amx-tile")))  // no wider vectors than the file's level

// The tiles' shapes for as long as it lives on this thread: all eight 16 rows x 64 bytes (C in
// tiles 0-3, A in 4-5, B in 6-7). Its end returns the tiles to their initial state, which the
// kernel's context switches then skip saving; oneDNN configures its own before each of its kernels.
class AmxTiles {
 public:
  STRIDER_AMX_TILE AmxTiles() {
    Config config;
    for (int t = 0; t < 8; ++t) {
      config.rows[t] = 16;
      config.bytes_per_row[t] = 64;
    }
    // Not _tile_loadconfig: GCC 12's tells the compiler the instruction reads 8 of the 64 bytes,
    // and the stores of the shapes above were dropped (the first tile instruction then faults).
    __asm__ volatile("ldtilecfg %0" : : "m"(config));
  }
  STRIDER_AMX_TILE ~AmxTiles() { _tile_release(); }
  AmxTiles(const AmxTiles&) = delete;
  AmxTiles& operator=(const AmxTiles&) = delete;

 private:
  struct alignas(64) Config {
    uint8_t palette = 1, start_row = 0, reserved[14] = {};
    uint16_t bytes_per_row[16] = {};
    uint8_t rows[16] = {};
  };
};

// MT x NT tiles of C (16 rows x 16 columns each; MT, NT 1 or 2) over k32 (a multiple of 32)
// k-steps. Strides in bytes: A rows lda * 2, B pair-rows (2 ldb elements) ldb * 4, C rows ldc * 4.
// GCC 12's tile loads and stores do not tell the compiler which memory they read or write: the
// barriers at entry and exit keep the panels' stores before them and C's reads after them.
template <int MT, int NT>
STRIDER_AMX_AVX512 inline void amx_tiles_avx512(int64_t k32, const uint16_t* a, int64_t lda, const uint16_t* b,
                                                int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  __asm__ volatile("" : : : "memory");
  const int64_t sa = lda * 2, sb = ldb * 4, sc = ldc * 4;
  float* c1 = c + 16 * ldc;
  if (accumulate) {
    _tile_loadd(0, c, sc);
    if constexpr (NT == 2) _tile_loadd(1, c + 16, sc);
    if constexpr (MT == 2) _tile_loadd(2, c1, sc);
    if constexpr (MT == 2 && NT == 2) _tile_loadd(3, c1 + 16, sc);
  } else {
    _tile_zero(0);
    if constexpr (NT == 2) _tile_zero(1);
    if constexpr (MT == 2) _tile_zero(2);
    if constexpr (MT == 2 && NT == 2) _tile_zero(3);
  }
  for (int64_t p = 0; p < k32; p += 32) {
    _tile_loadd(4, a + p, sa);
    if constexpr (MT == 2) _tile_loadd(5, a + 16 * lda + p, sa);
    _tile_loadd(6, b + p * ldb, sb);  // k-step p (even) starts pair-row p / 2, at p * ldb elements
    if constexpr (NT == 2) _tile_loadd(7, b + p * ldb + 32, sb);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (NT == 2) _tile_dpbf16ps(1, 4, 7);
    if constexpr (MT == 2) _tile_dpbf16ps(2, 5, 6);
    if constexpr (MT == 2 && NT == 2) _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, sc);
  if constexpr (NT == 2) _tile_stored(1, c + 16, sc);
  if constexpr (MT == 2) _tile_stored(2, c1, sc);
  if constexpr (MT == 2 && NT == 2) _tile_stored(3, c1 + 16, sc);
  __asm__ volatile("" : : : "memory");
}

// The whole product, with block_gemm_bf16_avx512's arguments and conditions (k rounded up to even
// with A's column k zero and B's row k finite; n a multiple of 16).
STRIDER_AMX_AVX512 inline void block_gemm_amx_avx512(int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda,
                                                     const uint16_t* b, int64_t ldb, float* c, int64_t ldc,
                                                     bool accumulate) {
  const int64_t m16 = m / 16 * 16, k32 = k / 32 * 32;
  if (k32 > 0) {
    for (int64_t i = 0; i < m16; i += 32) {
      const bool two_rows = m16 - i >= 32;
      const uint16_t* ai = a + i * lda;
      float* ci = c + i * ldc;
      for (int64_t j = 0; j < n; j += 32) {
        const bool two_columns = n - j >= 32;
        if (two_rows && two_columns)
          amx_tiles_avx512<2, 2>(k32, ai, lda, b + 2 * j, ldb, ci + j, ldc, accumulate);
        else if (two_rows)
          amx_tiles_avx512<2, 1>(k32, ai, lda, b + 2 * j, ldb, ci + j, ldc, accumulate);
        else if (two_columns)
          amx_tiles_avx512<1, 2>(k32, ai, lda, b + 2 * j, ldb, ci + j, ldc, accumulate);
        else
          amx_tiles_avx512<1, 1>(k32, ai, lda, b + 2 * j, ldb, ci + j, ldc, accumulate);
      }
    }
  }
  // The k-steps past k32 (and with k = 0, the zeros a product without accumulation writes).
  if (m16 > 0 && (k32 < k || k == 0))
    block_gemm_bf16_avx512(m16, n, k - k32, a + k32, lda, b + k32 * ldb, ldb, c, ldc, accumulate || k32 > 0);
  if (m16 < m) block_gemm_bf16_avx512(m - m16, n, k, a + m16 * lda, lda, b, ldb, c + m16 * ldc, ldc, accumulate);
}

#undef STRIDER_AMX_AVX512
#undef STRIDER_AMX_TILE

}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels::cpu
