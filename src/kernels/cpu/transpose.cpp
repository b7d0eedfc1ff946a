// Register transposes instead of strided scalar moves: for 32-bit elements (AVX, chosen at run
// time: kernels/cpu_isa.h) 8x8 blocks, eight 32-byte row loads, three shuffle stages, eight 32-byte
// stores; for 16-bit elements 16x16 blocks with AVX2 (half the shuffles per element of 8x8, and
// 32-byte stores that can stream) and 8x8 blocks with SSE2 elsewhere and at the edges. The rest of
// an edge falls back to scalar loops.
#include "kernels/cpu/transpose.h"

#include <immintrin.h>

#include "kernels/cpu_isa.h"

namespace strider::kernels::cpu {
namespace {

template <class T>
void scalar_block(const T* in, int64_t in_stride, T* out, int64_t out_stride, int64_t a0, int64_t a1, int64_t b0,
                  int64_t b1) {
  for (int64_t b = b0; b < b1; ++b)
    for (int64_t a = a0; a < a1; ++a) out[b * out_stride + a] = in[a * in_stride + b];
}

// 16-bit: in rows a..a+7 (each 8 consecutive b) -> out rows b..b+7 (each 8 consecutive a).
inline void transpose8x8_16bit(const uint16_t* in, int64_t in_stride, uint16_t* out, int64_t out_stride) {
  __m128i r[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + k * in_stride));
  const __m128i t0 = _mm_unpacklo_epi16(r[0], r[1]), t1 = _mm_unpackhi_epi16(r[0], r[1]);
  const __m128i t2 = _mm_unpacklo_epi16(r[2], r[3]), t3 = _mm_unpackhi_epi16(r[2], r[3]);
  const __m128i t4 = _mm_unpacklo_epi16(r[4], r[5]), t5 = _mm_unpackhi_epi16(r[4], r[5]);
  const __m128i t6 = _mm_unpacklo_epi16(r[6], r[7]), t7 = _mm_unpackhi_epi16(r[6], r[7]);
  const __m128i u0 = _mm_unpacklo_epi32(t0, t2), u1 = _mm_unpackhi_epi32(t0, t2);
  const __m128i u2 = _mm_unpacklo_epi32(t1, t3), u3 = _mm_unpackhi_epi32(t1, t3);
  const __m128i u4 = _mm_unpacklo_epi32(t4, t6), u5 = _mm_unpackhi_epi32(t4, t6);
  const __m128i u6 = _mm_unpacklo_epi32(t5, t7), u7 = _mm_unpackhi_epi32(t5, t7);
  const __m128i o[8] = {_mm_unpacklo_epi64(u0, u4), _mm_unpackhi_epi64(u0, u4), _mm_unpacklo_epi64(u1, u5),
                        _mm_unpackhi_epi64(u1, u5), _mm_unpacklo_epi64(u2, u6), _mm_unpackhi_epi64(u2, u6),
                        _mm_unpacklo_epi64(u3, u7), _mm_unpackhi_epi64(u3, u7)};
  for (int k = 0; k < 8; ++k) _mm_storeu_si128(reinterpret_cast<__m128i*>(out + k * out_stride), o[k]);
}

// in rows a..a+7 (each 8 consecutive b) -> out rows b..b+7 (each 8 consecutive a).
template <bool kStream>
__attribute__((target("avx"))) inline void transpose8x8(const float* in, int64_t in_stride, float* out, int64_t out_stride) {
  __m256 r0 = _mm256_loadu_ps(in + 0 * in_stride), r1 = _mm256_loadu_ps(in + 1 * in_stride);
  __m256 r2 = _mm256_loadu_ps(in + 2 * in_stride), r3 = _mm256_loadu_ps(in + 3 * in_stride);
  __m256 r4 = _mm256_loadu_ps(in + 4 * in_stride), r5 = _mm256_loadu_ps(in + 5 * in_stride);
  __m256 r6 = _mm256_loadu_ps(in + 6 * in_stride), r7 = _mm256_loadu_ps(in + 7 * in_stride);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  __m256 o[8] = {_mm256_permute2f128_ps(s0, s4, 0x20), _mm256_permute2f128_ps(s1, s5, 0x20),
                 _mm256_permute2f128_ps(s2, s6, 0x20), _mm256_permute2f128_ps(s3, s7, 0x20),
                 _mm256_permute2f128_ps(s0, s4, 0x31), _mm256_permute2f128_ps(s1, s5, 0x31),
                 _mm256_permute2f128_ps(s2, s6, 0x31), _mm256_permute2f128_ps(s3, s7, 0x31)};
  for (int k = 0; k < 8; ++k) {
    if constexpr (kStream) _mm256_stream_ps(out + k * out_stride, o[k]);
    else _mm256_storeu_ps(out + k * out_stride, o[k]);
  }
}

__attribute__((target("avx"))) void transpose_block_32bit_avx(const uint32_t* in, int64_t in_stride, uint32_t* out,
                                                              int64_t out_stride, int64_t a0, int64_t a1, int64_t b0,
                                                              int64_t b1, bool stream) {
  const int64_t a8 = a0 + (a1 - a0) / 8 * 8, b8 = b0 + (b1 - b0) / 8 * 8;
  const float* fin = reinterpret_cast<const float*>(in);
  float* fout = reinterpret_cast<float*>(out);
  // Streaming stores need 32-byte aligned rows: the base and the row stride must allow it.
  const bool aligned = (reinterpret_cast<uintptr_t>(fout + b0 * out_stride + a0) % 32 == 0) &&
                       (out_stride % 8 == 0);
  for (int64_t b = b0; b < b8; b += 8)
    for (int64_t a = a0; a < a8; a += 8) {
      if (stream && aligned)
        transpose8x8<true>(fin + a * in_stride + b, in_stride, fout + b * out_stride + a, out_stride);
      else
        transpose8x8<false>(fin + a * in_stride + b, in_stride, fout + b * out_stride + a, out_stride);
    }
  scalar_block(in, in_stride, out, out_stride, a8, a1, b0, b1);
  scalar_block(in, in_stride, out, out_stride, a0, a8, b8, b1);
}

// 16-bit, 16x16: in rows a..a+15 (each 16 consecutive b) -> out rows b..b+15. Each 128-bit lane
// of the two 8-row groups is transposed as 8x8 (the shuffles work within lanes); the lanes are
// then recombined: out row j is lane 0 of both groups' row j, out row j+8 their lane 1.
__attribute__((target("avx2"))) inline void transpose16x16_16bit(const uint16_t* in, int64_t in_stride, uint16_t* out,
                                                                 int64_t out_stride) {
  __m256i g[2][8];
  for (int h = 0; h < 2; ++h) {
    __m256i r[8];
    for (int k = 0; k < 8; ++k)
      r[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + (8 * h + k) * in_stride));
    const __m256i t0 = _mm256_unpacklo_epi16(r[0], r[1]), t1 = _mm256_unpackhi_epi16(r[0], r[1]);
    const __m256i t2 = _mm256_unpacklo_epi16(r[2], r[3]), t3 = _mm256_unpackhi_epi16(r[2], r[3]);
    const __m256i t4 = _mm256_unpacklo_epi16(r[4], r[5]), t5 = _mm256_unpackhi_epi16(r[4], r[5]);
    const __m256i t6 = _mm256_unpacklo_epi16(r[6], r[7]), t7 = _mm256_unpackhi_epi16(r[6], r[7]);
    const __m256i u0 = _mm256_unpacklo_epi32(t0, t2), u1 = _mm256_unpackhi_epi32(t0, t2);
    const __m256i u2 = _mm256_unpacklo_epi32(t1, t3), u3 = _mm256_unpackhi_epi32(t1, t3);
    const __m256i u4 = _mm256_unpacklo_epi32(t4, t6), u5 = _mm256_unpackhi_epi32(t4, t6);
    const __m256i u6 = _mm256_unpacklo_epi32(t5, t7), u7 = _mm256_unpackhi_epi32(t5, t7);
    g[h][0] = _mm256_unpacklo_epi64(u0, u4), g[h][1] = _mm256_unpackhi_epi64(u0, u4);
    g[h][2] = _mm256_unpacklo_epi64(u1, u5), g[h][3] = _mm256_unpackhi_epi64(u1, u5);
    g[h][4] = _mm256_unpacklo_epi64(u2, u6), g[h][5] = _mm256_unpackhi_epi64(u2, u6);
    g[h][6] = _mm256_unpacklo_epi64(u3, u7), g[h][7] = _mm256_unpackhi_epi64(u3, u7);
  }
  for (int j = 0; j < 8; ++j) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j * out_stride),
                        _mm256_permute2x128_si256(g[0][j], g[1][j], 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (j + 8) * out_stride),
                        _mm256_permute2x128_si256(g[0][j], g[1][j], 0x31));
  }
}

void transpose_block_16bit_sse2(const uint16_t* in, int64_t in_stride, uint16_t* out, int64_t out_stride, int64_t a0,
                                int64_t a1, int64_t b0, int64_t b1) {
  const int64_t a8 = a0 + (a1 - a0) / 8 * 8, b8 = b0 + (b1 - b0) / 8 * 8;
  for (int64_t b = b0; b < b8; b += 8)
    for (int64_t a = a0; a < a8; a += 8) transpose8x8_16bit(in + a * in_stride + b, in_stride, out + b * out_stride + a, out_stride);
  scalar_block(in, in_stride, out, out_stride, a8, a1, b0, b1);
  scalar_block(in, in_stride, out, out_stride, a0, a8, b8, b1);
}

__attribute__((target("avx2"))) void transpose_block_16bit_avx2(const uint16_t* in, int64_t in_stride, uint16_t* out,
                                                                int64_t out_stride, int64_t a0, int64_t a1, int64_t b0,
                                                                int64_t b1, bool stream) {
  const int64_t a16 = a0 + (a1 - a0) / 16 * 16, b16 = b0 + (b1 - b0) / 16 * 16;
  // Streaming stores pay off only when each cache line is written whole at once (with 16 rows
  // open, half lines are evicted half written): two 16x16 blocks go through an L1 buffer, then
  // each out row's 64 bytes stream out together. That needs rows on 64-byte boundaries.
  const bool lines = stream && reinterpret_cast<uintptr_t>(out + b0 * out_stride + a0) % 64 == 0 && out_stride % 32 == 0;
  const int64_t a32 = lines ? a0 + (a16 - a0) / 32 * 32 : a0;
  alignas(64) uint16_t tmp[16 * 32];
  for (int64_t b = b0; b < b16; b += 16) {
    for (int64_t a = a0; a < a32; a += 32) {
      transpose16x16_16bit(in + a * in_stride + b, in_stride, tmp, 32);
      transpose16x16_16bit(in + (a + 16) * in_stride + b, in_stride, tmp + 16, 32);
      for (int j = 0; j < 16; ++j) {
        const __m256i* t = reinterpret_cast<const __m256i*>(tmp + j * 32);
        __m256i* o = reinterpret_cast<__m256i*>(out + (b + j) * out_stride + a);
        _mm256_stream_si256(o, _mm256_load_si256(t));
        _mm256_stream_si256(o + 1, _mm256_load_si256(t + 1));
      }
    }
    for (int64_t a = a32; a < a16; a += 16)
      transpose16x16_16bit(in + a * in_stride + b, in_stride, out + b * out_stride + a, out_stride);
  }
  transpose_block_16bit_sse2(in, in_stride, out, out_stride, a16, a1, b0, b1);
  transpose_block_16bit_sse2(in, in_stride, out, out_stride, a0, a16, b16, b1);
}

}  // namespace

void transpose_block_32bit(const uint32_t* in, int64_t in_stride, uint32_t* out, int64_t out_stride,
                           int64_t a0, int64_t a1, int64_t b0, int64_t b1, bool stream) {
  if (cpu_has(Isa::avx2)) return transpose_block_32bit_avx(in, in_stride, out, out_stride, a0, a1, b0, b1, stream);
  scalar_block(in, in_stride, out, out_stride, a0, a1, b0, b1);
}

void transpose_block_16bit(const uint16_t* in, int64_t in_stride, uint16_t* out, int64_t out_stride,
                           int64_t a0, int64_t a1, int64_t b0, int64_t b1, bool stream) {
  if (cpu_has(Isa::avx2)) return transpose_block_16bit_avx2(in, in_stride, out, out_stride, a0, a1, b0, b1, stream);
  transpose_block_16bit_sse2(in, in_stride, out, out_stride, a0, a1, b0, b1);
}

void store_fence() { _mm_sfence(); }

}  // namespace strider::kernels::cpu
