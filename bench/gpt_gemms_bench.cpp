// Every linear layer's matrix products of a GPT training step on its own, in GFLOP/s and as a
// share of the peak of the threads it runs on (issue 32 §2: where the matmuls' lost time is;
// attention's own two products run inside the fused attention kernel, not here). For each linear
// layer of the block (and the head), the three products autograd runs, with the operands laid
// out exactly as LinearBackward passes them:
//   forward      y  = x [T, in] @ W[out, in]^T (+ bias)   (ops::linear)
//   grad input   dx = dy [T, out] @ W[out, in]             (ops::mm)
//   grad weight  dW = dy^T (a transposed view) @ x [T, in] (ops::mm)
// T = batch x sequence tokens. Each product's median over --reps runs is paired with the peak
// (FMA for float32, the bfloat16 dot product for bfloat16) measured right before it on the same
// threads, and the share is taken per pair; "step" weights every product by its time as a step
// runs them (the block's layers --n-layer times, the head once): sum of flops / sum of time x
// adjacent peak, the linear layers' part of a step's MFU.
//
//   OMP_NUM_THREADS=1 strider_bench_gpt_gemms [--n-layer 12] [--n-embd 768] [--tokens 1024]
//       [--vocab 256] [--dtype float32|bfloat16] [--reps 10]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <strider/strider.h>
#include <strider/ops/linear.h>
#include <strider/ops/view.h>

#include "fma_peak.h"
#include "median_seconds.h"

using namespace strider;

using strider::bench::median_seconds;

namespace {

double peak_now(bench::PeakLoop loop) {
  const auto start = std::chrono::steady_clock::now();
  const double flops = bench::peak_flops_until(loop, start + std::chrono::milliseconds(100));
  return flops / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 1e9;
}

struct Layer {
  const char* name;
  int64_t in, out;
  bool per_block;  // runs once per block (else once per step: the head)
};

}  // namespace

int main(int argc, char** argv) {
  int64_t n_layer = 12, n_embd = 768, tokens = 1024, vocab = 256;
  int reps = 10;
  std::string dtype_name = "float32";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--n-layer") n_layer = std::atoll(v.c_str());
    else if (k == "--n-embd") n_embd = std::atoll(v.c_str());
    else if (k == "--tokens") tokens = std::atoll(v.c_str());
    else if (k == "--vocab") vocab = std::atoll(v.c_str());
    else if (k == "--reps") reps = std::max(1, std::atoi(v.c_str()));
    else if (k == "--dtype") dtype_name = v;
    else {
      std::fprintf(stderr, "strider_bench_gpt_gemms: unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (dtype_name != "float32" && dtype_name != "bfloat16") {
    std::fprintf(stderr, "strider_bench_gpt_gemms: --dtype must be float32 or bfloat16, got %s\n", dtype_name.c_str());
    return 2;
  }
  if (n_layer <= 0 || n_embd <= 0 || tokens <= 0 || vocab <= 0) {
    std::fprintf(stderr, "strider_bench_gpt_gemms: --n-layer, --n-embd, --tokens and --vocab must be positive\n");
    return 2;
  }
  try {
    const ScalarType dt = dtype_name == "bfloat16" ? kBFloat16 : kFloat;
    const bench::PeakLoop loop = dt == kBFloat16 ? bench::PeakLoop::Bf16Dot : bench::PeakLoop::Fma;
    if (peak_now(loop) <= 0) {
      std::fprintf(stderr, "strider_bench_gpt_gemms: this CPU has no %s peak loop\n", dtype_name.c_str());
      return 2;
    }
    const std::vector<Layer> layers = {{"attn.qkv", n_embd, 3 * n_embd, true},
                                       {"attn.proj", n_embd, n_embd, true},
                                       {"mlp.fc", n_embd, 4 * n_embd, true},
                                       {"mlp.proj", 4 * n_embd, n_embd, true},
                                       {"lm_head", n_embd, vocab, false}};
    manual_seed(0);
    double step_flops = 0, step_peak_seconds = 0;
    std::printf("{\"bench\":\"gpt_gemms\",\"isa\":\"%s\",\"threads\":%d,\"dtype\":\"%s\",\"tokens\":%lld,\"n_embd\":%lld}\n",
                bench::peak_isa(), omp_get_max_threads(), dtype_name.c_str(), static_cast<long long>(tokens),
                static_cast<long long>(n_embd));
    for (const Layer& l : layers) {
      Tensor x = randn({tokens, l.in}).to(dt), w = randn({l.out, l.in}).to(dt), b = randn({l.out}).to(dt);
      Tensor dy = randn({tokens, l.out}).to(dt);
      struct Product {
        const char* name;
        int64_t m, k, n;
        std::function<void()> run;
      };
      const std::vector<Product> products = {
          {"forward", tokens, l.in, l.out, [&] { ops::linear(x, w, b); }},
          {"grad_input", tokens, l.out, l.in, [&] { ops::mm(dy, w); }},
          {"grad_weight", l.out, tokens, l.in, [&] { ops::mm(ops::t(dy), x); }},
      };
      for (const Product& p : products) {
        const double flops = 2.0 * static_cast<double>(p.m * p.k * p.n);
        const double peak = peak_now(loop);
        const double s = median_seconds(p.run, reps);
        const double gflops = flops / s / 1e9;
        const double times = l.per_block ? static_cast<double>(n_layer) : 1.0;
        step_flops += times * flops;
        step_peak_seconds += times * s * peak * 1e9;
        std::printf("{\"layer\":\"%s\",\"product\":\"%s\",\"m\":%lld,\"k\":%lld,\"n\":%lld,\"seconds\":%.6f,"
                    "\"gflops\":%.1f,\"peak_gflops\":%.1f,\"share_of_peak\":%.3f}\n",
                    l.name, p.name, static_cast<long long>(p.m), static_cast<long long>(p.k),
                    static_cast<long long>(p.n), s, gflops, peak, gflops / peak);
      }
    }
    std::printf("{\"step\":\"time-weighted\",\"share_of_peak\":%.3f}\n", step_flops / step_peak_seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strider_bench_gpt_gemms: %s\n", e.what());
    return 1;
  }
  return 0;
}
