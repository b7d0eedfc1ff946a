// ResNet-50's convolution shapes (forward, batch 16, channels-last and contiguous, float32 and
// bfloat16) in achieved GFLOP/s, as a fraction of the machine's peak measured in the same run
// with a large oneDNN matmul (float32: 4096^3 = 137 GFLOP per call; bfloat16 likewise).
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <strider/strider.h>
#include <strider/ops/conv.h>
#include <strider/ops/linear.h>

using namespace strider;

namespace {

template <class F>
double median_seconds(F&& f, int reps) {
  f();  // warm-up: primitive creation, page faults
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The machine's float32 FMA peak: every OpenMP thread runs 12 independent AVX-512 FMA chains.
double fma_peak_gflops() {
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

struct Layer {
  const char* name;
  int64_t c, h, k, r, stride, pad;
};

}  // namespace

int main(int argc, char** argv) {
  const int64_t batch = argc > 1 ? std::stoll(argv[1]) : 16;
  const std::vector<Layer> layers = {
      {"conv1 7x7/2", 3, 224, 64, 7, 2, 3},       {"layer1 1x1 64->64", 64, 56, 64, 1, 1, 0},
      {"layer1 3x3 64", 64, 56, 64, 3, 1, 1},      {"layer1 1x1 64->256", 64, 56, 256, 1, 1, 0},
      {"layer2 3x3 128/2", 128, 56, 128, 3, 2, 1}, {"layer2 1x1 128->512", 128, 28, 512, 1, 1, 0},
      {"layer3 3x3 256", 256, 14, 256, 3, 1, 1},   {"layer3 1x1 256->1024", 256, 14, 1024, 1, 1, 0},
      {"layer4 3x3 512", 512, 7, 512, 3, 1, 1},    {"layer4 1x1 512->2048", 512, 7, 2048, 1, 1, 0},
  };
  const double fma_peak = fma_peak_gflops();
  std::printf("float32 FMA peak (AVX-512, %d threads): %.1f GFLOP/s; bfloat16 dot-product peak is 2x that\n",
              omp_get_max_threads(), fma_peak);
  for (ScalarType dt : {kFloat, kBFloat16}) {
    NoGradGuard g;
    const int64_t n = 4096;
    Tensor a = randn({n, n}).to(dt), b = randn({n, n}).to(dt);
    const double matmul = 2.0 * n * n * n / median_seconds([&] { ops::mm(a, b); }, 3) / 1e9;
    // "of peak" is against the FMA peak (x2 for bfloat16's dot-product instructions) when known.
    const double peak = fma_peak > 0 ? fma_peak * (dt == kBFloat16 ? 2.0 : 1.0) : matmul;
    std::printf("\n%s: large oneDNN matmul (%lld^3) %.1f GFLOP/s = %.0f%% of peak %.1f GFLOP/s\n",
                std::string(to_string(dt)).c_str(), static_cast<long long>(n), matmul, 100 * matmul / peak, peak);
    std::printf("  %-24s %14s %8s %14s %8s %8s\n", "layer", "channels_last", "of peak", "contiguous", "of peak", "CL/NCHW");
    double flops_total = 0, t_cl_total = 0, t_nc_total = 0;
    for (const Layer& l : layers) {
      const int64_t oh = (l.h + 2 * l.pad - l.r) / l.stride + 1;
      const double flops = 2.0 * batch * l.k * oh * oh * l.c * l.r * l.r;
      Tensor x = randn({batch, l.c, l.h, l.h}).to(dt), w = randn({l.k, l.c, l.r, l.r}).to(dt);
      ops::ConvArgs args;
      args.stride = {l.stride};
      args.padding = {l.pad};
      Tensor xcl = x.contiguous(MemoryFormat::ChannelsLast), wcl = w.contiguous(MemoryFormat::ChannelsLast);
      const double t_cl = median_seconds([&] { ops::convolution(xcl, wcl, Tensor(), args); }, 5);
      const double t_nc = median_seconds([&] { ops::convolution(x, w, Tensor(), args); }, 5);
      flops_total += flops;
      t_cl_total += t_cl;
      t_nc_total += t_nc;
      std::printf("  %-24s %9.1f GF/s %7.0f%% %9.1f GF/s %7.0f%% %7.2fx\n", l.name, flops / t_cl / 1e9,
                  100 * flops / t_cl / 1e9 / peak, flops / t_nc / 1e9, 100 * flops / t_nc / 1e9 / peak, t_nc / t_cl);
    }
    std::printf("  %-24s %9.1f GF/s %7.0f%% %9.1f GF/s %7.0f%% %7.2fx\n", "all layers (time-weighted)",
                flops_total / t_cl_total / 1e9, 100 * flops_total / t_cl_total / 1e9 / peak, flops_total / t_nc_total / 1e9,
                100 * flops_total / t_nc_total / 1e9 / peak, t_nc_total / t_cl_total);
  }
  return 0;
}
