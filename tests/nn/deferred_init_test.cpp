// Deferred initialization: a model built under nn::DeferredInit holds no parameter memory;
// materializing draws every element from a counter-based generator keyed by (seed, name,
// index), so any row range drawn alone equals those rows of the whole; recipes follow the
// init calls (constants, uniform bounds, normal spreads), survive Module::to, and a parameter
// no init call set keeps its registered value. Philox4x32-10 matches Random123's published
// known-answer vectors.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <cmath>

#include "support/compare.h"

namespace strider {
namespace {

models::GPTConfig gpt_config() { return {.vocab_size = 64, .block_size = 16, .n_layer = 2, .n_head = 2, .n_embd = 32}; }

std::shared_ptr<models::GPT> deferred_gpt(uint64_t seed) {
  nn::DeferredInit deferred(seed);
  return std::make_shared<models::GPT>(gpt_config());
}

TEST(CounterRng, Philox4x32x10MatchesRandom123KnownAnswers) {
  using W = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), (W{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (W{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (W{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(CounterRng, UniformAndNormalHaveTheirMoments) {
  const uint64_t key = counter_rng_key(7, "w");
  double su = 0, su2 = 0, sn = 0, sn2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double u = counter_uniform(key, i), z = counter_normal(key, i);
    ASSERT_TRUE(u >= 0.0 && u < 1.0);
    su += u, su2 += u * u, sn += z, sn2 += z * z;
  }
  EXPECT_NEAR(su / n, 0.5, 0.003);
  EXPECT_NEAR(su2 / n - 0.25, 1.0 / 12 - 0.0, 0.003);
  EXPECT_NEAR(sn / n, 0.0, 0.01);
  EXPECT_NEAR(sn2 / n, 1.0, 0.01);
  EXPECT_NE(counter_rng_key(7, "w"), counter_rng_key(8, "w"));
  EXPECT_NE(counter_rng_key(7, "w"), counter_rng_key(7, "v"));
}

TEST(DeferredInit, BuildsWithoutParameterMemoryAndRefusesUseBeforeMaterializing) {
  const int64_t before = memory_stats().current_bytes;
  auto gpt = deferred_gpt(1);
  EXPECT_EQ(memory_stats().current_bytes, before);  // every parameter is a stand-in
  for (auto& [name, p] : gpt->named_parameters()) EXPECT_TRUE(nn::is_deferred(p)) << name;
  std::string error;
  try {
    (*gpt)(zeros({1, 4}, kLong));
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("deferred parameter not yet materialized"), std::string::npos) << error;
  // An optimizer built on the stand-ins would step tensors nothing reads once materialize gives
  // the module new ones: its step is a named error.
  optim::SGD early(gpt->named_parameters(), {.lr = 0.1});
  nn::materialize(*gpt);
  try {
    early.step();
    ADD_FAILURE() << "an optimizer stepped deferred stand-ins";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("after materialize()"), std::string::npos) << e.what();
  }
  for (auto& [name, p] : gpt->named_parameters()) EXPECT_FALSE(nn::is_deferred(p)) << name;
  EXPECT_EQ((*gpt)(zeros({1, 4}, kLong)).sizes(), IntArrayRef({1, 4, 64}));
}

// Root mean square and largest magnitude, computed here so the test does not lean on the reductions.
double rms(const Tensor& t) {
  const Tensor c = t.contiguous().to(kDouble);
  const double* p = static_cast<const double*>(c.data());
  double s = 0;
  for (int64_t i = 0; i < c.numel(); ++i) s += p[i] * p[i];
  return std::sqrt(s / static_cast<double>(c.numel()));
}
double max_abs(const Tensor& t) {
  const Tensor c = t.contiguous().to(kDouble);
  const double* p = static_cast<const double*>(c.data());
  double m = 0;
  for (int64_t i = 0; i < c.numel(); ++i) m = std::max(m, std::abs(p[i]));
  return m;
}

TEST(DeferredInit, ValuesDependOnSeedAndNameAndFollowTheInitCalls) {
  auto a = deferred_gpt(3), b = deferred_gpt(3), c = deferred_gpt(4);
  nn::materialize(*a);
  nn::materialize(*b);
  nn::materialize(*c);
  const auto sa = a->state_dict(), sb = b->state_dict(), sc = c->state_dict();
  for (auto& [name, t] : sa) {
    EXPECT_TRUE(testing::all_close(t, sb.at(name), 0, 0)) << name;
    const bool constant = name.find("ln") != std::string::npos || name.find("bias") != std::string::npos;
    if (!constant) EXPECT_FALSE(testing::all_close(t, sc.at(name), 0, 0)) << name;
  }
  // Same shape, different names: different draws.
  EXPECT_FALSE(testing::all_close(sa.at("h.0.c_fc.weight"), sa.at("h.1.c_fc.weight"), 0, 0));
  // LayerNorm ones and zeros, zero biases, N(0, 0.02) weights, residual projections scaled.
  EXPECT_TRUE(testing::all_close(sa.at("h.0.ln_1.weight"), ones({32}), 0, 0));
  EXPECT_TRUE(testing::all_close(sa.at("h.0.ln_1.bias"), zeros({32}), 0, 0));
  EXPECT_TRUE(testing::all_close(sa.at("h.0.c_fc.bias"), zeros({128}), 0, 0));
  EXPECT_NEAR(rms(sa.at("wte.weight")), 0.02, 0.002);
  EXPECT_NEAR(rms(sa.at("h.0.c_proj.weight")), 0.02 / std::sqrt(4.0), 0.001);
  // Linear's own kaiming-uniform recipe (no GPT override): bounded by 1/sqrt(fan_in).
  std::shared_ptr<nn::Linear> lin;
  {
    nn::DeferredInit deferred(5);
    lin = std::make_shared<nn::Linear>(100, 50);
  }
  nn::materialize(*lin);
  const double bound = 1.0 / std::sqrt(100.0);
  EXPECT_LE(max_abs(lin->param("weight")), bound);
  EXPECT_GT(max_abs(lin->param("weight")), 0.9 * bound);
}

TEST(DeferredInit, AnyRowRangeDrawnAloneEqualsThoseRowsOfTheWhole) {
  auto gpt = deferred_gpt(9);
  const auto params = gpt->named_parameters();
  std::map<std::string, Tensor> whole;
  for (auto& [name, p] : params) whole[name] = nn::materialize_tensor(p, name);
  for (auto& [name, p] : params) {
    const int64_t rows = p.size(0);
    for (int64_t begin : {int64_t{0}, rows / 3, rows - 1})
      for (int64_t count : {int64_t{1}, (rows - begin + 1) / 2, rows - begin}) {
        if (count <= 0) continue;
        DimVector shape = p.sizes().vec();
        shape[0] = count;
        Tensor part = empty(shape);
        nn::materialize_rows(p, name, begin, part);
        EXPECT_TRUE(testing::all_close(part, whole.at(name).narrow(0, begin, count), 0, 0)) << name << " " << begin;
      }
  }
  std::string error;
  try {
    nn::materialize_rows(params[0].second, params[0].first, params[0].second.size(0), empty(params[0].second.sizes()));
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("cannot write rows"), std::string::npos) << error;
}

TEST(DeferredInit, ModuleToKeepsTheRecipeInTheNewFormatAndDtype) {
  auto build = [] {
    nn::DeferredInit deferred(11);
    return models::small_cnn(10, 3);
  };
  auto plain = build(), channels_last = build(), half = build();
  channels_last->to(MemoryFormat::ChannelsLast);
  half->to(kBFloat16);
  for (auto& [name, p] : channels_last->named_parameters())
    if (p.dim() == 4) EXPECT_TRUE(nn::is_deferred(p) && p.is_contiguous(MemoryFormat::ChannelsLast)) << name;
  nn::materialize(*plain);
  nn::materialize(*channels_last);
  nn::materialize(*half);
  const auto want = plain->state_dict(), cl = channels_last->state_dict(), bf = half->state_dict();
  for (auto& [name, t] : want) {
    EXPECT_TRUE(testing::all_close(cl.at(name), t, 0, 0)) << name;
    if (is_floating_point(t.dtype())) EXPECT_TRUE(testing::all_close(bf.at(name), t.to(kBFloat16), 0, 0)) << name;
  }
  for (auto& [name, p] : channels_last->named_parameters())
    if (p.dim() == 4) EXPECT_TRUE(p.is_contiguous(MemoryFormat::ChannelsLast)) << name;
}

// A stand-in two modules share (a tied weight) stays one tensor through to() and materialize,
// and to() to an integer dtype is refused as PyTorch refuses it.
TEST(DeferredInit, ATiedStandInStaysTiedThroughTo) {
  std::shared_ptr<nn::Sequential> seq;
  std::shared_ptr<nn::Linear> a, b;
  {
    nn::DeferredInit deferred(4);
    a = std::make_shared<nn::Linear>(3, 3);
    b = std::make_shared<nn::Linear>(3, 3);
    b->set_param("weight", a->param("weight"));
    seq = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{a, b});
  }
  seq->to(kDouble);
  EXPECT_TRUE(a->param("weight").is_same(b->param("weight")));
  nn::materialize(*seq);
  EXPECT_TRUE(a->param("weight").is_same(b->param("weight")));
  EXPECT_EQ(b->param("weight").dtype(), kDouble);
  EXPECT_THROW(seq->to(kLong), Error);
}

// A module whose parameter no init call sets keeps the value it was registered with.
struct Scaled : nn::Module {
  Scaled() : nn::Module("Scaled") { register_parameter("scale", arange(6).to(kFloat).reshape({2, 3}) * 0.5); }
};

TEST(DeferredInit, AParameterNoInitCallSetsKeepsItsRegisteredValue) {
  std::shared_ptr<Scaled> m;
  {
    nn::DeferredInit deferred(1);
    m = std::make_shared<Scaled>();
  }
  EXPECT_TRUE(nn::is_deferred(m->param("scale")));
  nn::materialize(*m);
  EXPECT_TRUE(testing::all_close(m->param("scale"), arange(6).to(kFloat).reshape({2, 3}) * 0.5, 0, 0));
  EXPECT_TRUE(m->param("scale").requires_grad());
}

TEST(DeferredInit, EagerBuildsAreUnchanged) {
  manual_seed(5);
  auto a = std::make_shared<models::GPT>(gpt_config());
  manual_seed(5);
  auto b = std::make_shared<models::GPT>(gpt_config());
  for (auto& [name, p] : a->named_parameters()) EXPECT_FALSE(nn::is_deferred(p)) << name;
  const auto sb = b->state_dict();
  for (auto& [name, t] : a->state_dict()) EXPECT_TRUE(testing::all_close(t, sb.at(name), 0, 0)) << name;
}

}  // namespace
}  // namespace strider
