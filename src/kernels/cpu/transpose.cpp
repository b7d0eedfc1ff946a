// 8x8 register transposes: for 32-bit elements (AVX, chosen at run time: kernels/cpu_isa.h) eight
// 32-byte row loads, three shuffle stages, eight 32-byte stores; for 16-bit elements (SSE2) the
// same with 16-byte rows. Instead of 64 strided scalar moves. Edges fall back to scalar loops.
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

}  // namespace

void transpose_block_32bit(const uint32_t* in, int64_t in_stride, uint32_t* out, int64_t out_stride,
                           int64_t a0, int64_t a1, int64_t b0, int64_t b1, bool stream) {
  if (cpu_has(Isa::avx2)) return transpose_block_32bit_avx(in, in_stride, out, out_stride, a0, a1, b0, b1, stream);
  scalar_block(in, in_stride, out, out_stride, a0, a1, b0, b1);
}

void transpose_block_16bit(const uint16_t* in, int64_t in_stride, uint16_t* out, int64_t out_stride,
                           int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
  const int64_t a8 = a0 + (a1 - a0) / 8 * 8, b8 = b0 + (b1 - b0) / 8 * 8;
  for (int64_t b = b0; b < b8; b += 8)
    for (int64_t a = a0; a < a8; a += 8) transpose8x8_16bit(in + a * in_stride + b, in_stride, out + b * out_stride + a, out_stride);
  scalar_block(in, in_stride, out, out_stride, a8, a1, b0, b1);
  scalar_block(in, in_stride, out, out_stride, a0, a8, b8, b1);
}

void store_fence() { _mm_sfence(); }

}  // namespace strider::kernels::cpu
