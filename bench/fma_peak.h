#pragma once
// The machine's arithmetic peak now, measured by a loop of independent chains of the widest
// vectors the CPU has (AVX-512, else AVX2; chosen at run time, whatever the build's -march, and
// capped by STRIDER_MAX_CPU_ISA as the kernels are) on
// every OpenMP thread of the calling process for about 40 ms (or until a deadline, below): float32 FMAs (2 flops per lane), or
// bfloat16 dot products with the widest unit the kernels may use: AMX tiles where the CPU has them
// and the OS grants them (tdpbf16ps, 16x16x32 products a tile, oneDNN's bfloat16 matmuls and
// convolutions run on them), else vdpbf16ps (two bfloat16 products summed into each float32 lane,
// 4 flops per lane). On an AMX CPU the vector loop reads a sixth or less of the tiles' peak, and
// an MFU taken against it reads several times 100%. Benchmarks take it in the same run as what they time, because a shared host's speed
// drifts 2-3x between runs. 0 when the CPU lacks the instructions (no bfloat16 dot product below
// AVX512_BF16): print it with json_number(), which turns that into null.
#include <immintrin.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace strider::bench {

// v as a JSON number, or null when it is not a positive finite figure (a peak the CPU cannot
// reach, a ratio over such a peak): inf and nan are not JSON.
inline std::string json_number(double v, int decimals = 4) {
  if (!std::isfinite(v) || v <= 0) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// The level the peak loops use: the widest the CPU has, capped by STRIDER_MAX_CPU_ISA as strider's
// kernels are (kernels/cpu_isa.h; read here directly, so the canary needs nothing of strider), so
// that a capped run's MFU is taken against the peak of what it may run.
enum class PeakLevel { baseline, avx2, avx512, avx512_bf16, amx_bf16 };

// AMX-TILE and AMX-BF16, the tile state enabled in XCR0, and Linux's leave for this process to use
// it (asked for here, as oneDNN asks before its AMX kernels).
inline bool amx_bf16_granted() {
  unsigned a, b, c, d;
  __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
  if (!(d & (1u << 22)) || !(d & (1u << 24))) return false;
  __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
  if (!(c & (1u << 27))) return false;  // OSXSAVE
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17)) return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtileData = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0;
}

inline PeakLevel peak_level() {
  static const PeakLevel detected = [] {
    PeakLevel level = PeakLevel::baseline;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) level = PeakLevel::avx2;
    if (__builtin_cpu_supports("avx512f")) level = PeakLevel::avx512;
    if (level == PeakLevel::avx512 && __builtin_cpu_supports("avx512bf16")) level = PeakLevel::avx512_bf16;
    if (level == PeakLevel::avx512_bf16 && amx_bf16_granted()) level = PeakLevel::amx_bf16;
    return level;
  }();
  const char* cap = std::getenv("STRIDER_MAX_CPU_ISA");  // a bad value is strider's error to report
  if (!cap || !*cap) return detected;
  const std::string c = cap;
  const PeakLevel most = c == "baseline"      ? PeakLevel::baseline
                         : c == "avx2"        ? PeakLevel::avx2
                         : c == "avx512"      ? PeakLevel::avx512
                         : c == "avx512_bf16" ? PeakLevel::avx512_bf16
                                              : PeakLevel::amx_bf16;
  return std::min(detected, most);
}

// The instruction set the peak loops use: "amx_bf16", "avx512_bf16", "avx512", "avx2" or "baseline".
inline const char* peak_isa() {
  switch (peak_level()) {
    case PeakLevel::amx_bf16: return "amx_bf16";
    case PeakLevel::avx512_bf16: return "avx512_bf16";
    case PeakLevel::avx512: return "avx512";
    case PeakLevel::avx2: return "avx2";
    case PeakLevel::baseline: break;
  }
  return "baseline";
}

// The loops: `iters` iterations of 12 (bfloat16: 16) independent chains on the calling thread; the returned sum
// keeps the compiler from dropping them.
namespace detail {

__attribute__((target("avx2,fma"))) inline float fma_chunk_avx2(int64_t iters) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(1.0f + i * 1e-3f);
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], m, a);
  alignas(32) float lanes[8];
  float sink = 0;
  for (int i = 0; i < 12; ++i) {
    _mm256_store_ps(lanes, acc[i]);
    for (float x : lanes) sink += x;
  }
  return sink;
}

__attribute__((target("avx512f"))) inline float fma_chunk_avx512(int64_t iters) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(1.0f + i * 1e-3f);
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], m, a);
  float sink = 0;
  for (int i = 0; i < 12; ++i) sink += _mm512_reduce_add_ps(acc[i]);
  return sink;
}

// 16 chains, not 12: the dot product's longer latency leaves 12 chains 8-10% below what the
// unit does (Zen 5: 490-510 against 545-550 GFLOP/s per core, measured; oneDNN's bfloat16 matmuls
// read 100-102% of the 12-chain figure). 16 accumulators plus the operands fit AVX-512's 32
// registers; more spill.
constexpr int kBf16Chains = 16;
__attribute__((target("avx512f,avx512bf16"))) inline float bf16_chunk_avx512(int64_t iters) {
  __m512 acc[kBf16Chains];
  for (int i = 0; i < kBf16Chains; ++i) acc[i] = _mm512_set1_ps(1.0f + i * 1e-3f);
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(2e-3f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-4f), _mm512_set1_ps(3e-4f));
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < kBf16Chains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  float sink = 0;
  for (int i = 0; i < kBf16Chains; ++i) sink += _mm512_reduce_add_ps(acc[i]);
  return sink;
}

// AMX: six accumulator tiles (tdpbf16ps' latency is several times its issue interval) fed by the
// same two operand tiles, loaded once. Each tdpbf16ps: 16 x 16 outputs, 32 bfloat16 products each.
constexpr int kAmxChains = 6;
constexpr double kAmxFlopsPerIteration = 2.0 * 16 * 16 * 32 * kAmxChains;
struct alignas(64) AmxTileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};
__attribute__((target("amx-tile,amx-bf16"))) inline float bf16_chunk_amx(int64_t iters) {
  AmxTileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = 16;
    config.bytes_per_row[t] = 64;
  }
  __asm__ volatile("ldtilecfg %0" : : "m"(config));  // GCC 12's _tile_loadconfig claims to read 8 of the 64 bytes
  alignas(64) uint16_t a[16 * 32], b[16 * 32];
  for (int i = 0; i < 16 * 32; ++i) {
    a[i] = 0x3a83;  // about 1e-3 in bfloat16
    b[i] = 0x38d1;  // about 1e-4
  }
  _tile_loadd(6, a, 64);
  _tile_loadd(7, b, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  for (int64_t it = 0; it < iters; ++it) {
    _tile_dpbf16ps(0, 6, 7);
    _tile_dpbf16ps(1, 6, 7);
    _tile_dpbf16ps(2, 6, 7);
    _tile_dpbf16ps(3, 6, 7);
    _tile_dpbf16ps(4, 6, 7);
    _tile_dpbf16ps(5, 6, 7);
  }
  alignas(64) float c[16 * 16];
  _tile_stored(0, c, 64);
  _tile_release();
  float sink = 0;
  for (float x : c) sink += x;
  return sink;
}

// The loop on every OpenMP thread for a fixed number of iterations, in GFLOP/s over the time the
// slowest thread took.
template <class Loop>
inline double fixed_work_gflops(int64_t iters, double flops_per_iteration, Loop loop) {
  auto t0 = std::chrono::steady_clock::now();
  float sink = 0;
#pragma omp parallel reduction(+ : sink)
  sink += loop(iters);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double flops = flops_per_iteration * static_cast<double>(iters) * omp_get_max_threads();
  return sink == 42.0f ? 0.0 : flops / s / 1e9;
}

}  // namespace detail

inline double fma_peak_gflops() {
  const PeakLevel level = peak_level();
  if (level >= PeakLevel::avx512) return detail::fixed_work_gflops(20'000'000, 2.0 * 16 * 12, detail::fma_chunk_avx512);
  if (level == PeakLevel::avx2) return detail::fixed_work_gflops(40'000'000, 2.0 * 8 * 12, detail::fma_chunk_avx2);
  return 0.0;
}

inline double bf16_dot_peak_gflops() {
  if (peak_level() == PeakLevel::amx_bf16)
    return detail::fixed_work_gflops(500'000, detail::kAmxFlopsPerIteration, detail::bf16_chunk_amx);
  if (peak_level() == PeakLevel::avx512_bf16)
    return detail::fixed_work_gflops(15'000'000, 4.0 * 16 * detail::kBf16Chains, detail::bf16_chunk_avx512);
  return 0.0;
}

// The same loops over a wall-clock window instead of a fixed amount of work: the flops the
// calling process's OpenMP threads do until `deadline` (each thread stops at the first chunk of
// 100,000 iterations that ends past it). For a peak summed over several processes (the ranks of
// one job): each measured apart over its own time, a process that runs while the others have
// finished gets their cores as well, so the sum reads high on a loaded or oversubscribed machine
// (4 ranks on 2 cores read twice the cores' peak); counted over one window they add up to what
// the machine gave the job in it.
// Bf16Dot: the widest bfloat16 dot product (AMX where granted); Bf16Vector: vdpbf16ps even there.
enum class PeakLoop { Fma, Bf16Dot, Bf16Vector };

namespace detail {

template <class Step>
inline double chunks_until(std::chrono::steady_clock::time_point deadline, double flops_per_iteration, Step step) {
  constexpr int64_t kChunk = 100'000;
  double flops = 0;
#pragma omp parallel reduction(+ : flops)
  {
    float sink = 0;
    int64_t chunks = 0;
    do {
      sink += step(kChunk);
      ++chunks;
    } while (std::chrono::steady_clock::now() < deadline);
    flops = sink == 42.0f ? 0.0 : flops_per_iteration * static_cast<double>(kChunk * chunks);
  }
  return flops;
}

}  // namespace detail

// 0 when the CPU lacks the instructions.
inline double peak_flops_until(PeakLoop loop, std::chrono::steady_clock::time_point deadline) {
  const PeakLevel level = peak_level();
  if (loop == PeakLoop::Bf16Dot && level == PeakLevel::amx_bf16)
    return detail::chunks_until(deadline, detail::kAmxFlopsPerIteration, detail::bf16_chunk_amx);
  if (loop != PeakLoop::Fma) {
    if (level < PeakLevel::avx512_bf16) return 0.0;
    return detail::chunks_until(deadline, 4.0 * 16 * detail::kBf16Chains, detail::bf16_chunk_avx512);
  }
  if (level >= PeakLevel::avx512) return detail::chunks_until(deadline, 2.0 * 16 * 12, detail::fma_chunk_avx512);
  if (level == PeakLevel::avx2) return detail::chunks_until(deadline, 2.0 * 8 * 12, detail::fma_chunk_avx2);
  return 0.0;
}

}  // namespace strider::bench
