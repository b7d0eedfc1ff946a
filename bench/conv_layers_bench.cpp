// ResNet-50's convolution shapes (forward, batch 16, channels-last and contiguous, float32 and
// bfloat16) in achieved GFLOP/s, as a share of the machine's FMA peak.
//
//   [STRIDER_AUTOTUNE=1] strider_bench_conv_layers [batch] [rounds]
//
// The machine's speed drifts (2-3x between runs on a shared host), so a peak measured once at
// the start says little about a layer timed a minute later. Every layer timing is therefore
// paired with a peak measurement taken just before it, the share is computed per pair, and the
// figure reported is the median over the rounds. The whole-network share weights each layer by
// its time: sum(flops) / sum(time x adjacent peak), per round, median over rounds.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <strider/strider.h>
#include <strider/ops/conv.h>
#include <strider/ops/kernel_choice.h>
#include <strider/ops/linear.h>

#include "fma_peak.h"
#include "median_seconds.h"

using namespace strider;
using strider::bench::fma_peak_gflops;

using strider::bench::median_seconds;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Layer {
  const char* name;
  int64_t c, h, k, r, stride, pad;
};

}  // namespace

int main(int argc, char** argv) {
  const int64_t batch = argc > 1 ? std::stoll(argv[1]) : 16;
  const int rounds = argc > 2 ? std::stoi(argv[2]) : 5;
  if (batch < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: strider_bench_conv_layers [batch >= 1] [rounds >= 1]\n");
    return 2;
  }
  const std::vector<Layer> layers = {
      {"conv1 7x7/2", 3, 224, 64, 7, 2, 3},       {"layer1 1x1 64->64", 64, 56, 64, 1, 1, 0},
      {"layer1 3x3 64", 64, 56, 64, 3, 1, 1},      {"layer1 1x1 64->256", 64, 56, 256, 1, 1, 0},
      {"layer2 3x3 128/2", 128, 56, 128, 3, 2, 1}, {"layer2 1x1 128->512", 128, 28, 512, 1, 1, 0},
      {"layer3 3x3 256", 256, 14, 256, 3, 1, 1},   {"layer3 1x1 256->1024", 256, 14, 1024, 1, 1, 0},
      {"layer4 3x3 512", 512, 7, 512, 3, 1, 1},    {"layer4 1x1 512->2048", 512, 7, 2048, 1, 1, 0},
  };
  if (fma_peak_gflops() <= 0) {
    std::fprintf(stderr, "strider_bench_conv_layers: this CPU has no AVX2 FMA or AVX-512 to measure the peak with\n");
    return 2;
  }
  const char* tune = std::getenv("STRIDER_AUTOTUNE");
  set_kernel_autotune(tune && std::string(tune) == "1");
  std::printf("%d threads, batch %lld, %d rounds, autotune %s; every timing paired with an FMA peak measured just "
              "before it\n", omp_get_max_threads(), static_cast<long long>(batch), rounds, kernel_autotune() ? "on" : "off");
  for (ScalarType dt : {kFloat, kBFloat16}) {
    NoGradGuard g;
    // bfloat16's dot-product instructions do twice the work of a float32 FMA.
    const double per_fma = dt == kBFloat16 ? 2.0 : 1.0;
    const int64_t n = 4096;
    Tensor a = randn({n, n}).to(dt), b = randn({n, n}).to(dt);
    std::vector<double> mm_share;
    for (int r = 0; r < rounds; ++r) {
      const double peak = fma_peak_gflops() * per_fma;
      mm_share.push_back(2.0 * n * n * n / median_seconds([&] { ops::mm(a, b); }, 1) / 1e9 / peak);
    }
    std::printf("\n%s: large oneDNN matmul (%lld^3) at %.0f%% of peak\n", std::string(to_string(dt)).c_str(),
                static_cast<long long>(n), 100 * median(mm_share));
    std::printf("  %-24s %14s %8s %14s %8s %8s\n", "layer", "channels_last", "of peak", "contiguous", "of peak", "CL/NCHW");
    const size_t L = layers.size();
    // [layer][round]
    std::vector<std::vector<double>> t_cl(L), t_nc(L), p_cl(L), p_nc(L);
    std::vector<double> flops(L);
    for (int r = 0; r < rounds; ++r) {
      for (size_t i = 0; i < L; ++i) {
        const Layer& l = layers[i];
        const int64_t oh = (l.h + 2 * l.pad - l.r) / l.stride + 1;
        flops[i] = 2.0 * batch * l.k * oh * oh * l.c * l.r * l.r;
        Tensor x = randn({batch, l.c, l.h, l.h}).to(dt), w = randn({l.k, l.c, l.r, l.r}).to(dt);
        ops::ConvArgs args;
        args.stride = {l.stride};
        args.padding = {l.pad};
        Tensor xcl = x.contiguous(MemoryFormat::ChannelsLast), wcl = w.contiguous(MemoryFormat::ChannelsLast);
        p_cl[i].push_back(fma_peak_gflops() * per_fma);
        t_cl[i].push_back(median_seconds([&] { ops::convolution(xcl, wcl, Tensor(), args); }, 3));
        p_nc[i].push_back(fma_peak_gflops() * per_fma);
        t_nc[i].push_back(median_seconds([&] { ops::convolution(x, w, Tensor(), args); }, 3));
      }
    }
    auto share = [&](const std::vector<std::vector<double>>& t, const std::vector<std::vector<double>>& p, size_t i) {
      std::vector<double> s;
      for (int r = 0; r < rounds; ++r) s.push_back(flops[i] / t[i][r] / 1e9 / p[i][r]);
      return median(s);
    };
    auto network_share = [&](const std::vector<std::vector<double>>& t, const std::vector<std::vector<double>>& p) {
      std::vector<double> s;
      for (int r = 0; r < rounds; ++r) {
        double f = 0, tp = 0;
        for (size_t i = 0; i < L; ++i) {
          f += flops[i];
          tp += t[i][r] * p[i][r];
        }
        s.push_back(f / 1e9 / tp);
      }
      return median(s);
    };
    for (size_t i = 0; i < L; ++i) {
      std::printf("  %-24s %9.1f GF/s %7.0f%% %9.1f GF/s %7.0f%% %7.2fx\n", layers[i].name, flops[i] / median(t_cl[i]) / 1e9,
                  100 * share(t_cl, p_cl, i), flops[i] / median(t_nc[i]) / 1e9, 100 * share(t_nc, p_nc, i),
                  median(t_nc[i]) / median(t_cl[i]));
    }
    std::printf("  %-24s %14s %7.0f%% %14s %7.0f%%\n", "all layers (time-weighted)", "", 100 * network_share(t_cl, p_cl), "",
                100 * network_share(t_nc, p_nc));
  }
  return 0;
}
