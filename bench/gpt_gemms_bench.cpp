// Every linear layer's matrix products of a GPT training step on its own, in GFLOP/s and as a
// share of the peak of the threads it runs on (issue 32 §2: where the matmuls' lost time is), and
// the fused attention kernel's forward and backward (ops/attention.h). For each linear
// layer of the block (and the head), the three products autograd runs, with the operands laid
// out exactly as LinearBackward passes them:
//   forward      y  = x [T, in] @ W[out, in]^T (+ bias)   (ops::linear)
//   grad input   dx = dy [T, out] @ W[out, in]             (ops::mm)
//   grad weight  dW = dy^T (a transposed view) @ x [T, in] (ops::mm)
// T = batch x sequence tokens. Each product's median over --reps runs is paired with the peak
// (FMA for float32, the bfloat16 dot product for bfloat16) measured right before it on the same
// threads, and the share is taken per pair; "step" weights every product by its time as a step
// runs them (the block's layers --n-layer times, the head once): sum of flops / sum of time x
// adjacent peak, the linear layers' and attention's part of a step's MFU. Attention is causal over
// sequences of --seq tokens in --n-head heads: its "share_of_peak" counts the flops it executes
// (the key blocks a causal query block sees), "model_gflops" the flops the MFU formula counts
// for it (every query against every key: 4 T seq d forward, twice that backward), which is also
// what the step figure adds.
//
//   OMP_NUM_THREADS=1 strider_bench_gpt_gemms [--n-layer 12] [--n-embd 768] [--tokens 1024]
//       [--seq 256] [--n-head 12] [--vocab 256] [--dtype float32|bfloat16] [--reps 10]
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <strider/strider.h>
#include <strider/ops/attention.h>
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
  int64_t n_layer = 12, n_embd = 768, tokens = 1024, vocab = 256, seq = 256, n_head = 12;
  int reps = 10;
  std::string dtype_name = "float32";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--n-layer") n_layer = std::atoll(v.c_str());
    else if (k == "--n-embd") n_embd = std::atoll(v.c_str());
    else if (k == "--tokens") tokens = std::atoll(v.c_str());
    else if (k == "--vocab") vocab = std::atoll(v.c_str());
    else if (k == "--seq") seq = std::atoll(v.c_str());
    else if (k == "--n-head") n_head = std::atoll(v.c_str());
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
  if (n_layer <= 0 || n_embd <= 0 || tokens <= 0 || vocab <= 0 || seq <= 0 || n_head <= 0) {
    std::fprintf(stderr, "strider_bench_gpt_gemms: --n-layer, --n-embd, --tokens, --seq, --n-head and --vocab must be positive\n");
    return 2;
  }
  if (tokens % seq != 0 || n_embd % n_head != 0) {
    std::fprintf(stderr, "strider_bench_gpt_gemms: --tokens must be a multiple of --seq and --n-embd of --n-head\n");
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
    {
      // Attention as the model runs it: q, k, v split from one [B, seq, 3 H D] projection.
      const int64_t batch = tokens / seq, d = n_embd / n_head;
      Tensor qkv = randn({batch, seq, 3, n_head, d}).to(dt);
      auto heads = [&](int64_t i) { return qkv.select(2, i).transpose(1, 2); };
      const Tensor q = heads(0), k = heads(1), v = heads(2);
      const double scale = 1.0 / std::sqrt(static_cast<double>(d));
      const ops::AttentionResult fwd = ops::attention_forward(q, k, v, scale, true);
      const Tensor dout = randn({batch, n_head, seq, d}).to(dt);
      // Executed flops: the (query block, key block) pairs of 64 a causal pass visits.
      const int64_t blocks = (seq + 63) / 64;
      double visited = 0;
      for (int64_t i = 0; i < blocks; ++i)
        for (int64_t j = 0; j <= i; ++j) visited += static_cast<double>(std::min<int64_t>(64, seq - 64 * i) * std::min<int64_t>(64, seq - 64 * j));
      const double pair_flops = 2.0 * static_cast<double>(batch * n_head * d) * visited;  // one product over the visited pairs
      const double model_pair_flops = 2.0 * static_cast<double>(batch * n_head * d * seq * seq);
      struct Pass {
        const char* name;
        int products;
        std::function<void()> run;
      };
      const std::vector<Pass> passes = {
          {"forward", 2, [&] { ops::attention_forward(q, k, v, scale, true); }},
          {"backward", 5, [&] { ops::attention_backward(dout, q, k, v, fwd.out, fwd.lse, scale, true); }},
      };
      for (const Pass& pass : passes) {
        const double peak = peak_now(loop);
        const double s = median_seconds(pass.run, reps);
        const double flops = pass.products * pair_flops;
        // The MFU formula counts the backward as twice the forward (4 products' worth).
        const double model_flops = (pass.products == 2 ? 2 : 4) * model_pair_flops;
        step_flops += static_cast<double>(n_layer) * model_flops;
        step_peak_seconds += static_cast<double>(n_layer) * s * peak * 1e9;
        std::printf("{\"layer\":\"attention\",\"product\":\"%s\",\"batch\":%lld,\"heads\":%lld,\"seq\":%lld,\"head_dim\":%lld,"
                    "\"seconds\":%.6f,\"gflops\":%.1f,\"model_gflops\":%.1f,\"peak_gflops\":%.1f,\"share_of_peak\":%.3f}\n",
                    pass.name, static_cast<long long>(batch), static_cast<long long>(n_head), static_cast<long long>(seq),
                    static_cast<long long>(d), s, flops / s / 1e9, model_flops / s / 1e9, peak, flops / s / 1e9 / peak);
      }
    }
    std::printf("{\"step\":\"time-weighted\",\"share_of_peak\":%.3f}\n", step_flops / step_peak_seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strider_bench_gpt_gemms: %s\n", e.what());
    return 1;
  }
  return 0;
}
