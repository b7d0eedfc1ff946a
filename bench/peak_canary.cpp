// The machine's peak as an outsider measures it: a process of its own that runs the FMA and
// bfloat16 dot-product loops of fma_peak.h (AMX tiles where the CPU has them, and then the vector
// dot product as well, as "bf16_vector_gflops") on --threads OpenMP threads, one discarded round (the
// cores reach their clock) then --rounds measured ones, and prints one JSON line with each
// loop's median, min and max GFLOP/s. Benchmarks run it before and after what they time
// (bench/outside_peak.h), so the peak they divide by is not sampled from inside the run it judges.
// A round counts every thread's flops over a --window-ms window, as the in-process peak does:
// timing a fixed amount of work per thread instead reads the slowest thread's rate times the
// threads, which on a shared machine (one core also running another job) is well below what the
// cores gave.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fma_peak.h"

namespace {

std::string stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  using strider::bench::json_number;
  return "{\"median\":" + json_number(v[v.size() / 2], 1) + ",\"min\":" + json_number(v.front(), 1) +
         ",\"max\":" + json_number(v.back(), 1) + "}";
}

}  // namespace

int main(int argc, char** argv) {
  int threads = omp_get_max_threads(), rounds = 5, window_ms = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::clamp(std::atoi(argv[i + 1]), 1, 1000);
    if (std::strcmp(argv[i], "--window-ms") == 0) window_ms = std::clamp(std::atoi(argv[i + 1]), 1, 60'000);
  }
  omp_set_num_threads(threads);
  using strider::bench::PeakLoop;
  auto gflops = [&](PeakLoop loop) {
    const auto start = std::chrono::steady_clock::now();
    const double flops = strider::bench::peak_flops_until(loop, start + std::chrono::milliseconds(window_ms));
    return flops / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 1e9;
  };
  gflops(PeakLoop::Fma);  // discarded: the clock ramps up
  const bool amx = strider::bench::peak_level() == strider::bench::PeakLevel::amx_bf16;
  std::vector<double> fma, bf16, bf16_vector;
  for (int r = 0; r < rounds; ++r) {
    fma.push_back(gflops(PeakLoop::Fma));
    bf16.push_back(gflops(PeakLoop::Bf16Dot));
    if (amx) bf16_vector.push_back(gflops(PeakLoop::Bf16Vector));
  }
  const std::string vector = amx ? ",\"bf16_vector_gflops\":" + stats(bf16_vector) : "";
  std::printf("{\"isa\":\"%s\",\"threads\":%d,\"rounds\":%d,\"fma_gflops\":%s,\"bf16_gflops\":%s%s}\n",
              strider::bench::peak_isa(), threads, rounds, stats(fma).c_str(), stats(bf16).c_str(), vector.c_str());
  return 0;
}
