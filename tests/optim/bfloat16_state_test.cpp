// AdamW with bfloat16 moments (AdamOptions::state_dtype): half the state's memory, training that
// follows float32 state closely, a second moment that still decays, bits that do not depend on
// how a parameter is split or laid out, and every misuse a named error.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <cmath>
#include <cstring>

#include "support/compare.h"

namespace strider {
namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() &&
         std::memcmp(ca.data(), cb.data(), static_cast<size_t>(ca.numel()) * element_size(ca.dtype())) == 0;
}

// `steps` AdamW steps of a [64, 33] parameter on fixed pseudo-random gradients.
Tensor train(std::optional<ScalarType> state_dtype, int steps, Tensor* exp_avg_sq = nullptr) {
  manual_seed(11);
  Tensor p = randn({64, 33}).requires_grad_();
  optim::AdamW opt({{"w", p}}, {.lr = 1e-2, .weight_decay = 0.01, .state_dtype = state_dtype});
  Generator g(5);
  for (int t = 0; t < steps; ++t) {
    p.set_grad(randn({64, 33}, {}, &g) + 0.3);
    opt.step();
  }
  if (exp_avg_sq) *exp_avg_sq = opt.state().at("w").at("exp_avg_sq");
  return p.detach();
}

TEST(AdamBfloat16State, KeepsTwoBytesAMomentAndFollowsFloat32State) {
  const Tensor start = [] { manual_seed(11); return randn({64, 33}); }();
  Tensor v16, v32;
  const Tensor p16 = train(kBFloat16, 200, &v16), p32 = train(std::nullopt, 200, &v32);
  EXPECT_EQ(v16.dtype(), kBFloat16);
  EXPECT_EQ(v32.dtype(), kFloat);
  const double moved = strider::max((p32 - start).abs()).item<double>();
  const double diff = strider::max((p16 - p32).abs()).item<double>();
  EXPECT_GT(moved, 1.0);            // 200 steps of lr 1e-2 with a steady gradient
  EXPECT_LT(diff, 0.02 * moved) << "bfloat16 state drifted " << diff << " from float32 state (moved " << moved << ")";
  // Each step's rounding moves v by up to one bfloat16 step (2^-8 of it), unbiased, so v carries
  // a random walk of about 1.5% here (its memory is 1 / (1 - 0.999^2) = 500 steps); on average.
  const double v_err = mean((v16.to(kDouble) - v32.to(kDouble)).abs()).item<double>() / mean(v32.to(kDouble)).item<double>();
  EXPECT_LT(v_err, 0.03);
  std::printf("bfloat16 state after 200 steps: parameters within %.4f of float32 state's (moved %.3f); "
              "exp_avg_sq off by %.2f%% on average\n", diff, moved, 100 * v_err);
}

// Rounding to nearest would freeze exp_avg_sq: 0.999 v is within half a bfloat16 step of v.
TEST(AdamBfloat16State, TheSecondMomentDecaysWhenGradientsStop) {
  Tensor p = ones({4096}).requires_grad_();
  optim::AdamW opt({{"w", p}}, {.lr = 1e-3, .weight_decay = 0, .state_dtype = kBFloat16});
  p.set_grad(ones({4096}));
  opt.step();
  for (int t = 0; t < 2000; ++t) {
    p.set_grad(zeros({4096}));
    opt.step();
  }
  const double want = 0.001 * std::pow(0.999, 2000);  // 1.35e-4; it started at 1e-3
  const double got = mean(opt.state().at("w").at("exp_avg_sq").to(kDouble)).item<double>();
  EXPECT_NEAR(got, want, 0.03 * want);
}

// A parameter stepped whole, or as two row ranges with their element offsets (what FSDP's
// shards are), or in channels-last, gets the same bits.
TEST(AdamBfloat16State, BitsDoNotDependOnSplitOrLayout) {
  manual_seed(2);
  const Tensor init = randn({6, 4, 3, 3}), grad = randn({6, 4, 3, 3});
  auto run = [&](const Tensor& p0, int64_t offset) {
    Tensor p = p0.clone(p0.suggest_memory_format()).requires_grad_();
    optim::AdamW opt({{"conv.weight", p}}, {.lr = 1e-2, .state_dtype = kBFloat16});
    opt.set_element_offset(0, offset);
    const int64_t rows = p0.size(0), first = offset / (4 * 9);
    for (int t = 0; t < 3; ++t) {
      p.set_grad(grad.narrow(0, first, rows).contiguous(p0.suggest_memory_format()) * (t + 1));
      opt.step();
    }
    return std::pair{p.detach(), opt.state().at("conv.weight").at("exp_avg_sq")};
  };
  const auto [whole, whole_v] = run(init, 0);
  const auto [top, top_v] = run(init.narrow(0, 0, 4).contiguous(), 0);
  const auto [bottom, bottom_v] = run(init.narrow(0, 4, 2).contiguous(), 4 * 4 * 9);
  EXPECT_TRUE(same_bits(cat({top, bottom}, 0), whole));
  EXPECT_TRUE(same_bits(cat({top_v, bottom_v}, 0), whole_v));
  const auto [cl, cl_v] = run(init.contiguous(MemoryFormat::ChannelsLast), 0);
  EXPECT_TRUE(cl.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(same_bits(cl, whole));
  EXPECT_TRUE(same_bits(cl_v, whole_v));
}

TEST(AdamBfloat16State, SavedStateResumesAndOtherDtypesAreNamed) {
  manual_seed(4);
  Tensor p = randn({10, 3}).requires_grad_();
  optim::AdamW opt({{"w", p}}, {.lr = 1e-2, .state_dtype = kBFloat16});
  p.set_grad(randn({10, 3}));
  opt.step();
  // A state dict round trip keeps bfloat16 state, and the next step gives the same bits.
  Tensor q = p.detach().clone().requires_grad_();
  optim::AdamW again({{"w", q}}, {.lr = 1e-2, .state_dtype = kBFloat16});
  again.load_state_dict(opt.state_dict());
  EXPECT_EQ(again.state().at("w").at("exp_avg").dtype(), kBFloat16);
  const Tensor g = randn({10, 3});
  p.set_grad(g);
  q.set_grad(g.clone());
  opt.step();
  again.step();
  EXPECT_TRUE(same_bits(p.detach(), q.detach()));
  EXPECT_TRUE(same_bits(opt.state().at("w").at("exp_avg_sq"), again.state().at("w").at("exp_avg_sq")));
  // load_state_dict casts (PyTorch does, to the parameter's dtype): float32 state into bfloat16.
  optim::AdamW float_state({{"w", p}}, {.lr = 1e-2});
  p.set_grad(g);
  float_state.step();
  optim::AdamW cast({{"w", q}}, {.lr = 1e-2, .state_dtype = kBFloat16});
  cast.load_state_dict(float_state.state_dict());
  EXPECT_EQ(cast.state().at("w").at("exp_avg").dtype(), kBFloat16);
  // load_state (what checkpoints use) takes only the dtype the optimizer keeps, and says why.
  try {
    cast.load_state(float_state.state(), 1, "the test's state");
    ADD_FAILURE() << "float32 state loaded into a bfloat16-state optimizer";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bfloat16 state"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("state_dtype"), std::string::npos) << e.what();
  }
}

TEST(AdamBfloat16State, MisuseIsANamedError) {
  Tensor p = zeros({4}).requires_grad_();
  auto message = [](auto&& make) {
    try {
      make();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { optim::AdamW({{"w", p}}, {.amsgrad = true, .state_dtype = kBFloat16}); }).find("amsgrad"),
            std::string::npos);
  EXPECT_NE(message([&] { optim::Adam({{"w", p}}, {.state_dtype = kLong}); }).find("state_dtype int64"),
            std::string::npos);
  Tensor d = zeros({4}, kDouble).requires_grad_();
  EXPECT_NE(message([&] { optim::AdamW({{"w", d}}, {.state_dtype = kBFloat16}); }).find("'w' is float64"),
            std::string::npos);
  Tensor b = zeros({4}, kBFloat16).requires_grad_();
  EXPECT_NE(message([&] { optim::AdamW({{"w", b}}, {.state_dtype = kFloat}); }).find("is for float32 parameters"),
            std::string::npos);
  optim::AdamW opt({{"w", p}}, {.state_dtype = kBFloat16});
  // A group added later is checked when it steps, naming the parameter.
  opt.add_param_group({{{"late", d}}, {}});
  d.set_grad(ones({4}, kDouble));
  EXPECT_NE(message([&] { opt.step(); }).find("'late' is float64"), std::string::npos);
  EXPECT_THROW(opt.set_element_offset(2, 0), Error);  // two parameters
  EXPECT_THROW(opt.set_element_offset(0, -1), Error);
}

}  // namespace
}  // namespace strider
