#pragma once
// The machine's arithmetic peak now, measured by a loop of independent AVX-512 chains on every
// OpenMP thread of the calling process for about 40 ms: float32 FMAs (2 flops per lane), or
// bfloat16 dot products (vdpbf16ps: two bfloat16 products summed into each float32 lane, 4 flops
// per lane). Benchmarks take it in the same run as what they time, because a shared host's speed
// drifts 2-3x between runs. 0 when the build or CPU lacks the instructions.
#include <immintrin.h>
#include <omp.h>

#include <chrono>
#include <cstdint>

namespace strider::bench {

inline double fma_peak_gflops() {
#if defined(__AVX512F__)
  const int64_t iters = 20'000'000;
  auto t0 = std::chrono::steady_clock::now();
  float sink = 0;
#pragma omp parallel reduction(+ : sink)
  {
    __m512 acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(1.0f + i * 1e-3f);
    const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
    for (int64_t it = 0; it < iters; ++it)
      for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], m, a);
    for (int i = 0; i < 12; ++i) sink += _mm512_reduce_add_ps(acc[i]);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double flops = 2.0 * 16 * 12 * static_cast<double>(iters) * omp_get_max_threads();
  return sink == 42.0f ? 0.0 : flops / s / 1e9;
#else
  return 0.0;
#endif
}

inline double bf16_dot_peak_gflops() {
#if defined(__AVX512BF16__)
  const int64_t iters = 20'000'000;
  auto t0 = std::chrono::steady_clock::now();
  float sink = 0;
#pragma omp parallel reduction(+ : sink)
  {
    __m512 acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(1.0f + i * 1e-3f);
    const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(2e-3f));
    const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-4f), _mm512_set1_ps(3e-4f));
    for (int64_t it = 0; it < iters; ++it)
      for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    for (int i = 0; i < 12; ++i) sink += _mm512_reduce_add_ps(acc[i]);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double flops = 4.0 * 16 * 12 * static_cast<double>(iters) * omp_get_max_threads();
  return sink == 42.0f ? 0.0 : flops / s / 1e9;
#else
  return 0.0;
#endif
}

}  // namespace strider::bench
