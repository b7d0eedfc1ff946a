// scaled_dot_product_attention: the fused kernel against PyTorch 1.13's math definition
// (tests/golden/generate_attention.py), against the float64 reference and the composite path
// over many shapes and layouts, float64 finite differences, memory, and misuse.
#include <omp.h>
#include <xmmintrin.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "strider/ops/attention.h"
#include "strider/ops/softmax.h"
#include "support/compare.h"
#include "support/gradcheck.h"

namespace strider {
namespace {

namespace F = nn::functional;
using testing::all_close;

const io::SafetensorsFile& golden() {
  static const io::SafetensorsFile file = io::load_safetensors(STRIDER_GOLDEN_DIR "/attention.safetensors");
  return file;
}

struct Result {
  Tensor out, dq, dk, dv;
};

// Output and gradients of sum(out * grad_out) for leaves copied from q, k, v.
Result run(const Tensor& q0, const Tensor& k0, const Tensor& v0, const Tensor& grad_out, bool causal,
           std::optional<double> scale = std::nullopt, const Tensor& mask = Tensor()) {
  Tensor q = q0.detach().clone().requires_grad_(), k = k0.detach().clone().requires_grad_(),
         v = v0.detach().clone().requires_grad_();
  Tensor out = F::scaled_dot_product_attention(q, k, v, mask, 0.0, causal, scale);
  sum(out * grad_out).backward();
  return {out.detach(), q.grad(), k.grad(), v.grad()};
}

::testing::AssertionResult close(const Result& got, const Result& want, double rtol, double atol) {
  const char* names[] = {"out", "dq", "dk", "dv"};
  const Tensor* g[] = {&got.out, &got.dq, &got.dk, &got.dv};
  const Tensor* w[] = {&want.out, &want.dq, &want.dk, &want.dv};
  for (int i = 0; i < 4; ++i) {
    auto r = all_close(*g[i], *w[i], rtol, atol);
    if (!r) return r << " in " << names[i];
  }
  return ::testing::AssertionSuccess();
}

TEST(Attention, MatchesPyTorchMath) {
  const auto& t = golden().tensors;
  for (const char* name : {"causal_blocks", "cross_long_keys", "causal_rectangular", "explicit_scale", "single"}) {
    SCOPED_TRACE(name);
    const auto desc = nlohmann::json::parse(golden().metadata.at(name));
    const std::string p = name;
    std::optional<double> scale;
    if (!desc["scale"].is_null()) scale = desc["scale"].get<double>();
    const Result want{t.at(p + ".out"), t.at(p + ".grad.q"), t.at(p + ".grad.k"), t.at(p + ".grad.v")};
    const Tensor &q = t.at(p + ".in.q"), &k = t.at(p + ".in.k"), &v = t.at(p + ".in.v");
    const Tensor& g = t.at(p + ".in.grad_out");
    const bool causal = desc["is_causal"];
    EXPECT_TRUE(close(run(q, k, v, g, causal, scale), want, 1e-4, 2e-5)) << "fused";
    {
      KernelPreferenceGuard reference(KernelPreference::Reference);
      EXPECT_TRUE(close(run(q, k, v, g, causal, scale), want, 1e-4, 2e-5)) << "reference";
    }
    // An all-true bool mask (with the causal part spelled out) takes the composite path.
    Tensor keep = ones({q.sizes()[2], k.sizes()[2]}, kBool);
    if (causal) keep = logical_not(gt(arange(k.sizes()[2]).reshape({1, -1}) - arange(q.sizes()[2]).reshape({-1, 1}), 0));
    EXPECT_TRUE(close(run(q, k, v, g, false, scale, keep), want, 1e-4, 2e-5)) << "composite";
  }
}

// The blocked kernel against the float64 reference: partial blocks, head sizes that are not a
// multiple of the vector width, more or fewer keys than queries, and operands that are views.
TEST(Attention, BlockedKernelMatchesTheReference) {
  struct Shape {
    int64_t B, H, L, S, D;
  };
  for (Shape s : {Shape{1, 1, 1, 1, 1}, Shape{2, 3, 64, 64, 64}, Shape{1, 2, 65, 65, 17}, Shape{1, 1, 130, 130, 80},
                  Shape{2, 1, 7, 200, 33}, Shape{1, 2, 150, 40, 16}, Shape{1, 1, 129, 129, 128}}) {
    for (bool causal : {false, true}) {
      SCOPED_TRACE(::testing::Message() << s.B << "x" << s.H << " L=" << s.L << " S=" << s.S << " D=" << s.D
                                        << (causal ? " causal" : ""));
      Generator gen(s.L * 31 + s.D);
      // q, k, v as split views of one [B, T, 3 H D] projection, the way a model produces them.
      auto heads = [&](int64_t n, uint64_t seed) {
        Generator g(seed);
        Tensor packed = randn({s.B, n, 3 * s.H * s.D}, kFloat, &g) * 2.0;
        return packed.narrow(2, s.H * s.D, s.H * s.D).reshape({s.B, n, s.H, s.D}).transpose(1, 2);
      };
      Tensor q = heads(s.L, 1), k = heads(s.S, 2), v = heads(s.S, 3);
      Tensor g = randn({s.B, s.H, s.L, s.D}, kFloat, &gen);
      Result fused = run(q, k, v, g, causal);
      Result reference;
      {
        KernelPreferenceGuard guard(KernelPreference::Reference);
        reference = run(q, k, v, g, causal);
      }
      EXPECT_TRUE(close(fused, reference, 2e-4, 2e-5));
      // Heads are interleaved in memory, so concatenating them back is a view.
      EXPECT_TRUE(fused.out.transpose(1, 2).is_contiguous());
    }
  }
}

// 16-bit storage against the float64 reference on the values it holds. float16 computes in
// float32; bfloat16 too, or on CPUs with AMX or vdpbf16ps in bfloat16 products with float32
// accumulation, the probabilities and score gradients rounded to bfloat16 for the products that
// take them (ctests nn_attention_capped_* run the other forms on such a CPU). Partial blocks, odd head
// sizes and lengths, more or fewer keys than queries, causal or not: every result within 1.5/256
// of the reference in relative norm (measured on a Zen 4: 0.0014-0.0033 with bfloat16 products,
// 0.0013-0.0021 in float32, where it is the results' own rounding), and elementwise within 3e-2.
TEST(Attention, ReducedPrecisionMatchesTheReferenceOnItsValues) {
  struct Shape {
    int64_t B, H, L, S, D;
  };
  auto relative_error = [](const Tensor& got, const Tensor& want) {
    const Tensor diff = got.to(kDouble) - want;
    return std::sqrt(sum(diff * diff).item<double>() / std::max(sum(want * want).item<double>(), 1e-300));
  };
  for (Shape s : {Shape{2, 2, 70, 70, 32}, Shape{1, 2, 65, 65, 17}, Shape{1, 1, 130, 130, 80}, Shape{2, 1, 7, 200, 33},
                  Shape{1, 2, 150, 41, 64}}) {
    Generator gen(s.L * 7 + s.D);
    Tensor q = randn({s.B, s.H, s.L, s.D}, kFloat, &gen), k = randn({s.B, s.H, s.S, s.D}, kFloat, &gen);
    Tensor v = randn({s.B, s.H, s.S, s.D}, kFloat, &gen), g = randn({s.B, s.H, s.L, s.D}, kFloat, &gen);
    for (bool causal : {false, true}) {
      for (ScalarType dt : {kBFloat16, kHalf}) {
        SCOPED_TRACE(::testing::Message() << dt << " " << s.B << "x" << s.H << " L=" << s.L << " S=" << s.S
                                          << " D=" << s.D << (causal ? " causal" : ""));
        auto held = [&](const Tensor& t) { return t.to(dt).to(kDouble); };  // the values the 16-bit run sees
        Result want;
        {
          KernelPreferenceGuard reference(KernelPreference::Reference);
          want = run(held(q), held(k), held(v), held(g), causal);
        }
        Result got = run(q.to(dt), k.to(dt), v.to(dt), g.to(dt), causal);
        EXPECT_EQ(got.out.dtype(), dt);
        EXPECT_EQ(got.dq.dtype(), dt);
        const Tensor* gs[] = {&got.out, &got.dq, &got.dk, &got.dv};
        const Tensor* ws[] = {&want.out, &want.dq, &want.dk, &want.dv};
        for (int i = 0; i < 4; ++i) {
          EXPECT_LT(relative_error(*gs[i], *ws[i]), 1.5 / 256) << "result " << i;
          EXPECT_TRUE(all_close(gs[i]->to(kDouble), *ws[i], 3e-2, 3e-2)) << "result " << i;
        }
      }
    }
  }
}

TEST(Attention, RowsOfNonUnitStrideAreCopiedOnce) {
  Generator gen(11);
  Tensor q = randn({1, 2, 16, 40}, kFloat, &gen).transpose(2, 3);  // [1, 2, 40, 16], element stride 40
  Tensor k = randn({1, 2, 16, 40}, kFloat, &gen).transpose(2, 3);
  Tensor v = randn({1, 2, 40, 16}, kFloat, &gen), g = randn({1, 2, 40, 16}, kFloat, &gen);
  EXPECT_TRUE(close(run(q, k, v, g, true), run(q.contiguous(), k.contiguous(), v, g, true), 0, 0));
}

TEST(Attention, Float64FiniteDifferences) {
  using testing::gradcheck;
  using testing::leaf;
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    std::vector<Tensor> in = {leaf({1, 2, 5, 3}, 1), leaf({1, 2, 7, 3}, 2), leaf({1, 2, 7, 3}, 3)};
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& x) { return fused_attention(x[0], x[1], x[2], 0.7, causal); },
                          in));
  }
  // The composite path: a float mask added to the scores, a value head size of its own.
  std::vector<Tensor> in = {leaf({2, 4, 3}, 4), leaf({2, 5, 3}, 5), leaf({2, 5, 2}, 6), leaf({4, 5}, 7)};
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& x) { return F::scaled_dot_product_attention(x[0], x[1], x[2], x[3]); }, in));
}

// The fused path keeps no [L, S] tensor alive for the backward: the saved state is q, k, v, the
// output and one float per query row.
TEST(Attention, FusedPathSavesNoScoreMatrix) {
  const int64_t B = 1, H = 4, T = 512, D = 32;
  Generator gen(5);
  auto run_peak = [&](bool fused) {
    Tensor q = randn({B, H, T, D}, kFloat, &gen).requires_grad_(), k = randn({B, H, T, D}, kFloat, &gen).requires_grad_();
    Tensor v = randn({B, H, T, D}, kFloat, &gen).requires_grad_();
    const int64_t before = memory_stats().current_bytes;
    // A bool mask equal to the causal one forces the composite path.
    Tensor mask = fused ? Tensor() : logical_not(gt(arange(T).reshape({1, T}) - arange(T).reshape({T, 1}), 0));
    Tensor out = F::scaled_dot_product_attention(q, k, v, mask, 0.0, fused);
    return memory_stats().current_bytes - before - (fused ? 0 : mask.numel());
  };
  const int64_t fused = run_peak(true), composite = run_peak(false);
  const int64_t scores = B * H * T * T * 4;
  EXPECT_LT(fused, scores / 4) << "fused keeps " << fused << " bytes";
  EXPECT_GE(composite, scores) << "composite keeps " << composite << " bytes";
}

TEST(Attention, SplitHasOneBackwardBuffer) {
  Tensor x = arange(24).to(kDouble).reshape({2, 12}).requires_grad_();
  std::vector<Tensor> parts = split(x, 5, 1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].sizes(), IntArrayRef({2, 2}));
  EXPECT_EQ(parts[1].data(), static_cast<double*>(x.data()) + 5);  // views
  // Pieces without a gradient contribute zeros.
  (sum(parts[0] * 2.0) + sum(parts[2] * 3.0)).backward();
  Tensor want = cat({full({2, 5}, 2.0, kDouble), zeros({2, 5}, kDouble), full({2, 2}, 3.0, kDouble)}, 1);
  EXPECT_TRUE(all_close(x.grad(), want, 0, 0));
  EXPECT_THROW(split(x, 0, 1), Error);
  EXPECT_THROW(split(x, 2, 2), Error);
}

TEST(Attention, MisuseIsAnErrorNamingTheOp) {
  Tensor q = randn({1, 2, 4, 8}), k = randn({1, 2, 6, 8}), v = randn({1, 2, 6, 8});
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (auto [what, call] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"key must be [..., S, 8]", [&] { F::scaled_dot_product_attention(q, randn({1, 2, 6, 5}), v); }},
           {"one floating dtype", [&] { fused_attention(q, k.to(kDouble), v, 1.0, false); }},
           {"batch and head sizes", [&] { fused_attention(q, randn({1, 3, 6, 8}), randn({1, 3, 6, 8}), 1.0, false); }},
           {"either attn_mask or is_causal", [&] { F::scaled_dot_product_attention(q, k, v, ones({4, 6}, kBool), 0.0, true); }},
           {"dropout_p", [&] { F::scaled_dot_product_attention(q, k, v, Tensor(), 1.0); }},
           {"scale must be finite", [&] { F::scaled_dot_product_attention(q, k, v, Tensor(), 0.0, false, INFINITY); }},
           {"attn_mask must be bool", [&] { F::scaled_dot_product_attention(q, k, v, ones({4, 6}, kLong)); }},
           {"4-d", [&] { fused_attention(randn({2, 4, 8}), randn({2, 6, 8}), randn({2, 6, 8}), 1.0, false); }},
       }) {
    const std::string msg = message(call);
    EXPECT_NE(msg.find("scaled_dot_product_attention"), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << "expected '" << what << "' in: " << msg;
  }
}

// Intel cores take a microcode assist (about 150 cycles a lane) for every subnormal result or
// operand. A causal mask's hidden scores are -inf and their exponentials are 0; before, they passed
// through a subnormal 2^-150 first, and the blocked float32 attention ran 1.35x slower for it on an
// Intel Xeon. MXCSR's underflow and denormal flags record any subnormal the calling thread made
// (one thread, so every kernel runs on it).
TEST(Attention, MaskedScoresMakeNoSubnormals) {
  constexpr unsigned kUnderflowOrDenormal = _MM_EXCEPT_UNDERFLOW | _MM_EXCEPT_DENORM;
  struct OneThread {
    int before = omp_get_max_threads();
    OneThread() { omp_set_num_threads(1); }
    ~OneThread() { omp_set_num_threads(before); }
  } one_thread;
  Generator gen(7);
  Tensor q = randn({1, 2, 130, 64}, kFloat, &gen), k = randn({1, 2, 130, 64}, kFloat, &gen);
  Tensor v = randn({1, 2, 130, 64}, kFloat, &gen), dout = randn({1, 2, 130, 64}, kFloat, &gen);
  _mm_setcsr(_mm_getcsr() & ~_MM_EXCEPT_MASK);
  const ops::AttentionResult fwd = ops::attention_forward(q, k, v, 0.125, true);
  ops::attention_backward(dout, q, k, v, fwd.out, fwd.lse, 0.125, true);
  EXPECT_EQ(_mm_getcsr() & kUnderflowOrDenormal, 0u) << "attention";
  // A softmax over masked scores, as a model builds one by hand.
  Tensor scores = masked_fill(randn({4, 100}), gt(arange(100), 49), -INFINITY);
  _mm_setcsr(_mm_getcsr() & ~_MM_EXCEPT_MASK);
  ops::softmax(scores, 1);
  EXPECT_EQ(_mm_getcsr() & kUnderflowOrDenormal, 0u) << "softmax";
}

// Probabilities under 3.3e-38 (scores more than 86.3 below their row's maximum) are 0 in the
// blocked kernel (AttentionRows.* tests the threshold). Small integers in q and k (times 16) make
// scores that are exact in float32 and spread widely: about 8% of the probabilities are that
// small. The results stay with the float64 reference, which keeps every probability. (The
// absolute tolerance is for dk: where one key takes nearly all of a row, its score gradient is
// p (dp - delta) with dp and delta nearly equal, and their float32 rounding, times q's 16,
// moves dk by up to 3e-5, with or without the flush: the bits are the same.)
TEST(Attention, FlushedProbabilitiesMoveNoResult) {
  Generator gen(7);
  auto small_integers = [&](double times) {
    return (randn({1, 2, 130, 64}, kFloat, &gen) * 1.5).to(kInt).to(kFloat) * times;
  };
  Tensor q = small_integers(16.0), k = small_integers(1.0);
  Tensor v = randn({1, 2, 130, 64}, kFloat, &gen), dout = randn({1, 2, 130, 64}, kFloat, &gen);
  Result reference;
  {
    KernelPreferenceGuard guard(KernelPreference::Reference);
    reference = run(q.to(kDouble), k.to(kDouble), v.to(kDouble), dout.to(kDouble), true, 0.125);
  }
  EXPECT_TRUE(close(run(q, k, v, dout, true, 0.125), reference, 2e-4, 1e-4));
}

TEST(Attention, NoKeysGiveZeros) {
  Tensor q = randn({1, 1, 3, 4}).requires_grad_(), k = randn({1, 1, 0, 4}), v = randn({1, 1, 0, 4});
  Tensor out = fused_attention(q, k, v, 0.5, false);
  EXPECT_TRUE(all_close(out, zeros({1, 1, 3, 4}), 0, 0));
  sum(out).backward();
  EXPECT_TRUE(all_close(q.grad(), zeros({1, 1, 3, 4}), 0, 0));
}

}  // namespace
}  // namespace strider
