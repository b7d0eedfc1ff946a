#pragma once
// The per-row steps between attention's block products (kernels/attention.h): the forward's
// online softmax of a row of scores, and the backward's probabilities and score gradients. An
// AVX-512 body (chosen at run time; functions named *_avx512 are compiled for it whatever the
// file's level) and a portable one. The AVX-512 bodies work on whole vectors, with the hidden
// columns masked in blocks that have any: the portable loops left scalar remainders (GCC peels
// and splits them) that took a third of the forward's time.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernels/cpu_isa.h"
#include "kernels/isa_namespace.h"
#include "kernels/vec_math.h"

namespace strider::kernels::cpu {
inline namespace STRIDER_ISA_NAMESPACE {
namespace attention_rows {  // names of their own: another kernel header may want an exp_avx512 too

#define STRIDER_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl")))

// Probabilities (and rescale factors) below exp(-86.3) = 3.3e-38 are 0: from there down p 2^n
// could leave the normal range (n < -125), and Intel cores take a microcode assist, about 150
// cycles a lane, for each subnormal result or operand. Against a row sum of at least 1 such a
// probability moves no float32 output unless |v| exceeds 1e31. GPU kernels flush the same way.
constexpr float kFlushBelow = -86.3f;

// vmath::exp on 16 lanes (the same range reduction and polynomial, its multiply-adds fused: within
// an ulp), with results under kFlushBelow flushed to 0: every intermediate stays normal.
STRIDER_AVX512 inline __m512 exp_avx512(__m512 x) {
  const __m512 hi = _mm512_set1_ps(88.7228394f), lo = _mm512_set1_ps(kFlushBelow);
  // Lanes below lo (and NaN) compute with 0 and are replaced below.
  const __m512 xc = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lo, _CMP_GE_OQ), _mm512_min_ps(x, hi));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
  // p 2^n in one instruction, exact as vmath's two power-of-two products are (n is at most 128).
  __m512 result = _mm512_scalef_ps(p, n);
  result = _mm512_mask_mov_ps(result, _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ),
                              _mm512_set1_ps(std::numeric_limits<float>::infinity()));
  result = _mm512_mask_mov_ps(result, _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), _mm512_setzero_ps());
  return _mm512_mask_mov_ps(result, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

// The same for one float (the portable bodies).
inline float exp_flushed(float x) {
  const bool flushed = x < kFlushBelow;
  const float e = vmath::exp(flushed ? 0.0f : x);
  return flushed ? 0.0f : e;
}

// Lanes [begin, end) of the 16 starting at `at`.
STRIDER_AVX512 inline __mmask16 lanes_avx512(int64_t at, int64_t begin, int64_t end) {
  const __m512i index = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(at)),
                                         _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  return _mm512_cmp_epi32_mask(index, _mm512_set1_epi32(static_cast<int32_t>(begin)), _MM_CMPINT_NLT) &
         _mm512_cmp_epi32_mask(index, _mm512_set1_epi32(static_cast<int32_t>(end)), _MM_CMPINT_LT);
}

// Forward: a row of n raw scores (n a multiple of 16) of which the first `visible` (>= 1) count
// becomes exp(score * scale - max), the rest 0; the running max and sum move on; returns the
// factor the row's output so far must be multiplied by. kMasked: some of the n are hidden (the
// body without masks is for the blocks wholly visible, most of a causal pass's).
template <bool kMasked>
STRIDER_AVX512 inline float online_softmax_row_body_avx512(float* row, int64_t n, int64_t visible, float scale,
                                                           float& row_max, float& row_sum) {
  const __m512 s = _mm512_set1_ps(scale), hidden = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 top = _mm512_set1_ps(row_max);
  for (int64_t c = 0; c < n; c += 16) {
    const __m512 raw = _mm512_loadu_ps(row + c);
    const __m512 x = kMasked ? _mm512_mask_mul_ps(hidden, lanes_avx512(c, 0, visible), raw, s) : _mm512_mul_ps(raw, s);
    top = _mm512_max_ps(top, x);
  }
  const float mx = _mm512_reduce_max_ps(top);
  const __m512 m = _mm512_set1_ps(mx);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t c = 0; c < n; c += 16) {
    const __m512 shifted = _mm512_fmsub_ps(_mm512_loadu_ps(row + c), s, m);
    const __m512 x = kMasked ? _mm512_mask_mov_ps(hidden, lanes_avx512(c, 0, visible), shifted) : shifted;
    const __m512 e = exp_avx512(x);
    _mm512_storeu_ps(row + c, e);
    sum = _mm512_add_ps(sum, e);
  }
  const float alpha = exp_flushed(row_max - mx);
  row_sum = row_sum * alpha + _mm512_reduce_add_ps(sum);
  row_max = mx;
  return alpha;
}

STRIDER_AVX512 inline float online_softmax_row_avx512(float* row, int64_t n, int64_t visible, float scale,
                                                      float& row_max, float& row_sum) {
  return visible >= n ? online_softmax_row_body_avx512<false>(row, n, visible, scale, row_max, row_sum)
                      : online_softmax_row_body_avx512<true>(row, n, visible, scale, row_max, row_sum);
}

// Backward: for the n (a multiple of 16) queries of a key's row, p = exp(score * scale - lse) for
// the queries [first, end) that see the key (0 for the others) and the score gradient
// ds = p (dp - delta) scale, in place of the scores and the probability gradients.
template <bool kMasked>
STRIDER_AVX512 inline void probabilities_and_grads_body_avx512(float* scores, float* dprobs, int64_t n, int64_t first,
                                                               int64_t end, float scale, const float* lse,
                                                               const float* delta) {
  const __m512 s = _mm512_set1_ps(scale), hidden = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t r = 0; r < n; r += 16) {
    const __m512 shifted = _mm512_fmsub_ps(_mm512_loadu_ps(scores + r), s, _mm512_loadu_ps(lse + r));
    const __m512 x = kMasked ? _mm512_mask_mov_ps(hidden, lanes_avx512(r, first, end), shifted) : shifted;
    const __m512 p = exp_avx512(x);
    _mm512_storeu_ps(scores + r, p);
    const __m512 dp = _mm512_sub_ps(_mm512_loadu_ps(dprobs + r), _mm512_loadu_ps(delta + r));
    _mm512_storeu_ps(dprobs + r, _mm512_mul_ps(_mm512_mul_ps(p, dp), s));
  }
}

STRIDER_AVX512 inline void probabilities_and_grads_avx512(float* scores, float* dprobs, int64_t n, int64_t first,
                                                          int64_t end, float scale, const float* lse,
                                                          const float* delta) {
  if (first <= 0 && end >= n) probabilities_and_grads_body_avx512<false>(scores, dprobs, n, first, end, scale, lse, delta);
  else probabilities_and_grads_body_avx512<true>(scores, dprobs, n, first, end, scale, lse, delta);
}

#undef STRIDER_AVX512

inline float online_softmax_row(float* row, int64_t n, int64_t visible, float scale, float& row_max, float& row_sum) {
  if (cpu_has(Isa::avx512)) return online_softmax_row_avx512(row, n, visible, scale, row_max, row_sum);
  float mx = row_max;
  for (int64_t c = 0; c < visible; ++c) mx = std::max(mx, row[c] * scale);
  const float alpha = exp_flushed(row_max - mx);
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < visible; ++c) {
    const float e = exp_flushed(row[c] * scale - mx);
    row[c] = e;
    sum += e;
  }
  std::fill(row + visible, row + n, 0.0f);
  row_sum = row_sum * alpha + sum;
  row_max = mx;
  return alpha;
}

inline void probabilities_and_grads(float* scores, float* dprobs, int64_t n, int64_t first, int64_t end, float scale,
                                    const float* lse, const float* delta) {
  if (cpu_has(Isa::avx512)) return probabilities_and_grads_avx512(scores, dprobs, n, first, end, scale, lse, delta);
#pragma omp simd
  for (int64_t r = 0; r < n; ++r) {
    const bool seen = r < end && r >= first;
    const float p = seen ? exp_flushed(scores[r] * scale - lse[r]) : 0.0f;
    scores[r] = p;
    dprobs[r] = p * (dprobs[r] - delta[r]) * scale;
  }
}

}  // namespace attention_rows
}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels::cpu
