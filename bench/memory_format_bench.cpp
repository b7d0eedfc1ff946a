// Memory-format kernels against memcpy of the same bytes, measured in one run:
//   * NCHW -> NHWC and NHWC -> NCHW copies of a 32x256x56x56 float32 tensor;
//   * binary add of two same-format tensors, contiguous and channels-last;
//   * per-call overhead of add on 1-element tensors.
// Prints the ratios the tensor-core issue sets goals for after the Google Benchmark table.
#include <omp.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <strider/strider.h>

#include "ratio_reporter.h"

using namespace strider;

namespace {

const std::vector<int64_t> kShape = {32, 256, 56, 56};

Tensor nchw() {
  static Tensor t = rand(kShape);
  return t;
}
Tensor nhwc() {
  static Tensor t = rand(kShape, TensorOptions().memory_format(MemoryFormat::ChannelsLast));
  return t;
}

void set_bytes(benchmark::State& state, int64_t bytes) {
  state.SetBytesProcessed(state.iterations() * bytes);
}

// memcpy split over the OpenMP threads, as our copies are: the bandwidth baseline.
void BM_MemcpyParallel(benchmark::State& state) {
  Tensor src = nchw(), dst = strider::empty(kShape);
  const size_t n = src.nbytes();
  char* d = static_cast<char*>(dst.data());
  const char* s = static_cast<const char*>(src.data());
  for (auto _ : state) {
#pragma omp parallel
    {
      size_t nt = omp_get_num_threads(), t = omp_get_thread_num();
      size_t chunk = (n + nt - 1) / nt, b = std::min(n, t * chunk), e = std::min(n, b + chunk);
      std::memcpy(d + b, s + b, e - b);
    }
    benchmark::ClobberMemory();
  }
  set_bytes(state, 2 * static_cast<int64_t>(n));
}

void BM_MemcpySingleThread(benchmark::State& state) {
  Tensor src = nchw(), dst = strider::empty(kShape);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.nbytes());
    benchmark::ClobberMemory();
  }
  set_bytes(state, 2 * static_cast<int64_t>(src.nbytes()));
}

void BM_CopyNCHWtoNHWC(benchmark::State& state) {
  Tensor src = nchw(), dst = empty(kShape, MemoryFormat::ChannelsLast);
  for (auto _ : state) dst.copy_(src);
  set_bytes(state, 2 * static_cast<int64_t>(src.nbytes()));
}

void BM_CopyNHWCtoNCHW(benchmark::State& state) {
  Tensor src = nhwc(), dst = strider::empty(kShape);
  for (auto _ : state) dst.copy_(src);
  set_bytes(state, 2 * static_cast<int64_t>(src.nbytes()));
}

void BM_AddContiguous(benchmark::State& state) {
  Tensor a = nchw(), b = nchw(), out = strider::empty(kShape);
  for (auto _ : state) add_out(out, a, b);
  set_bytes(state, 3 * static_cast<int64_t>(a.nbytes()));
}

void BM_AddChannelsLast(benchmark::State& state) {
  Tensor a = nhwc(), b = nhwc(), out = empty(kShape, MemoryFormat::ChannelsLast);
  for (auto _ : state) add_out(out, a, b);
  set_bytes(state, 3 * static_cast<int64_t>(a.nbytes()));
}

// Functional add (allocates its output) of two 1-element tensors: the per-call overhead.
void BM_AddOneElement(benchmark::State& state) {
  Tensor a = ones({1}), b = ones({1});
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
}

BENCHMARK(BM_MemcpyParallel)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_MemcpySingleThread)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_CopyNCHWtoNHWC)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_CopyNHWCtoNCHW)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_AddContiguous)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_AddChannelsLast)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_AddOneElement)->Unit(benchmark::kNanosecond)->MinTime(1.0);

}  // namespace

int main(int argc, char** argv) {
  // Machine-readable output (used by compare_memory_format_pytorch.py): no ratio summary.
  bool json = false;
  for (int i = 1; i < argc; ++i) json |= std::string(argv[i]) == "--benchmark_format=json";
  benchmark::Initialize(&argc, argv);
  if (json) {
    benchmark::RunSpecifiedBenchmarks();
    return 0;
  }
  strider::bench::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  auto t = [&](const char* n) { return reporter.seconds(n); };
  const double memcpy_par = t("BM_MemcpyParallel"), memcpy_one = t("BM_MemcpySingleThread");
  const double memcpy_best = std::min(memcpy_par > 0 ? memcpy_par : 1e30, memcpy_one > 0 ? memcpy_one : 1e30);
  std::printf("\nratios (same run; memcpy baseline = the faster of parallel and single-thread memcpy)\n");
  auto ratio = [&](const char* label, double seconds, double bytes_factor, double goal) {
    if (seconds <= 0 || memcpy_best >= 1e30) return;
    // Bandwidth ratio: (bytes moved / time) over memcpy's (2 * nbytes / time).
    double r = (bytes_factor / seconds) / (2.0 / memcpy_best);
    std::printf("  %-34s %.2f of memcpy bandwidth (goal >= %.2f)\n", label, r, goal);
  };
  ratio("copy NCHW -> NHWC", t("BM_CopyNCHWtoNHWC"), 2, 0.5);
  ratio("copy NHWC -> NCHW", t("BM_CopyNHWCtoNCHW"), 2, 0.5);
  ratio("add, contiguous", t("BM_AddContiguous"), 3, 0.6);
  ratio("add, channels_last", t("BM_AddChannelsLast"), 3, 0.6);
  if (t("BM_AddContiguous") > 0 && t("BM_AddChannelsLast") > 0)
    std::printf("  %-34s %.3f (goal within 5%%: 0.95..1.05)\n", "add time channels_last/contiguous",
                t("BM_AddChannelsLast") / t("BM_AddContiguous"));
  if (t("BM_AddOneElement") > 0)
    std::printf("  %-34s %.0f ns (goal < 300 ns)\n", "add of 1-element tensors", t("BM_AddOneElement") * 1e9);
  return 0;
}
