// Memory-format kernels against memcpy of the same bytes, measured in one run:
//   * NCHW -> NHWC and NHWC -> NCHW copies of a 32x256x56x56 float32 tensor;
//   * binary add of two same-format tensors, contiguous and channels-last;
//   * per-call overhead of add on 1-element tensors.
// Prints the ratios the tensor-core issue sets goals for after the Google Benchmark table.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <strider/strider.h>

#include "ratio_reporter.h"

using namespace strider;

namespace {

const std::vector<int64_t> kShape = {32, 256, 56, 56};

// Two distinct tensors per format, so a binary op really reads two streams.
Tensor nchw(int which = 0) {
  static Tensor t[2] = {rand(kShape), rand(kShape)};
  return t[which];
}
Tensor nhwc(int which = 0) {
  static Tensor t[2] = {rand(kShape, TensorOptions().memory_format(MemoryFormat::ChannelsLast)),
                        rand(kShape, TensorOptions().memory_format(MemoryFormat::ChannelsLast))};
  return t[which];
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
  Tensor a = nchw(0), b = nchw(1), out = strider::empty(kShape);
  for (auto _ : state) add_out(out, a, b);
  set_bytes(state, 3 * static_cast<int64_t>(a.nbytes()));
}

void BM_AddChannelsLast(benchmark::State& state) {
  Tensor a = nhwc(0), b = nhwc(1), out = empty(kShape, MemoryFormat::ChannelsLast);
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

template <class F>
double time_once(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Times `op` and `baseline` alternately, so drift on this shared machine hits both alike, and
// returns the median over rounds of time(baseline) / time(op).
// `baseline` returns its own time (it may time several candidates).
template <class Op, class Base>
double paired_speed_ratio(Op&& op, Base&& baseline, int rounds = 31) {
  std::vector<double> r;
  for (int i = 0; i <= rounds; ++i) {
    double tb = baseline(), to = time_once(op);
    if (i > 0) r.push_back(tb / to);  // round 0 warms up
  }
  std::sort(r.begin(), r.end());
  return r[r.size() / 2];
}

void parallel_memcpy(void* dst, const void* src, size_t n) {
#pragma omp parallel
  {
    size_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    size_t chunk = (n + nt - 1) / nt, b = std::min(n, t * chunk), e = std::min(n, b + chunk);
    std::memcpy(static_cast<char*>(dst) + b, static_cast<const char*>(src) + b, e - b);
  }
}

void print_paired_ratios() {
  Tensor a = nchw(0), b = nchw(1), out = strider::empty(kShape);
  Tensor acl = nhwc(0), bcl = nhwc(1), outcl = empty(kShape, MemoryFormat::ChannelsLast);
  Tensor scratch = strider::empty(kShape);
  const size_t n = a.nbytes();
  auto memcpy_par = [&] { parallel_memcpy(scratch.data(), a.data(), n); };
  auto memcpy_one = [&] { std::memcpy(scratch.data(), a.data(), n); };
  // The stricter baseline each round: the faster of a 1-thread and a 2-thread memcpy.
  auto base = [&] {
    double t1 = time_once(memcpy_one), t2 = time_once(memcpy_par);
    return std::min(t1, t2);
  };
  std::printf("\nratios, paired (op and baseline alternate, median of 31 rounds; baseline = the"
              " faster of 1- and 2-thread memcpy of the same bytes in that round)\n");
  auto line = [](const char* label, double r, double goal) {
    std::printf("  %-34s %.2f of memcpy bandwidth (goal >= %.2f)\n", label, r, goal);
  };
  // Bandwidth ratio = (bytes moved by op / t_op) / (2n / t_memcpy); copies move 2n, adds 3n.
  line("copy NCHW -> NHWC", paired_speed_ratio([&] { outcl.copy_(a); }, base), 0.5);
  line("copy NHWC -> NCHW", paired_speed_ratio([&] { out.copy_(acl); }, base), 0.5);
  {
    // bfloat16 (the channels-last detour of plain-layout convolutions and batch norms): the
    // baseline copies the same bytes, half of the float32 tensor's.
    Tensor h = a.to(kBFloat16), hcl = acl.to(kBFloat16);
    Tensor h_out = strider::empty(kShape, TensorOptions().dtype(kBFloat16));
    Tensor hcl_out = strider::empty(kShape, TensorOptions().dtype(kBFloat16).memory_format(MemoryFormat::ChannelsLast));
    const size_t hn = h.nbytes();
    auto base16 = [&] {
      double t1 = time_once([&] { std::memcpy(scratch.data(), h.data(), hn); });
      double t2 = time_once([&] { parallel_memcpy(scratch.data(), h.data(), hn); });
      return std::min(t1, t2);
    };
    line("copy NCHW -> NHWC, bfloat16", paired_speed_ratio([&] { hcl_out.copy_(h); }, base16), 0.5);
    line("copy NHWC -> NCHW, bfloat16", paired_speed_ratio([&] { h_out.copy_(hcl); }, base16), 0.5);
  }
  line("add, contiguous", 1.5 * paired_speed_ratio([&] { add_out(out, a, b); }, base), 0.6);
  line("add, channels_last", 1.5 * paired_speed_ratio([&] { add_out(outcl, acl, bcl); }, base), 0.6);
  std::printf("  %-34s %.3f (goal within 5%%: 0.95..1.05)\n", "add time channels_last/contiguous",
              paired_speed_ratio([&] { add_out(outcl, acl, bcl); },
                                 [&] { return time_once([&] { add_out(out, a, b); }); }));
}

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
  print_paired_ratios();
  if (t("BM_AddOneElement") > 0)
    std::printf("  %-34s %.0f ns (goal < 300 ns)\n", "add of 1-element tensors", t("BM_AddOneElement") * 1e9);
  return 0;
}
