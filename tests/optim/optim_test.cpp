// Optimizers against hand-derived updates, layout preservation, and schedules.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "support/compare.h"
#include "support/gradcheck.h"

namespace strider {
namespace {

using testing::values;

TEST(SGD, MomentumNesterovWeightDecay) {
  Tensor p = tensor(std::vector<double>{1.0}, kDouble).requires_grad_();
  optim::SGD opt({{"p", p}}, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.5, .nesterov = true});
  // d = g + wd*p; buf = d (first step); update = d + 0.9 buf
  p.set_grad(tensor(std::vector<double>{2.0}, kDouble));
  opt.step();
  double d = 2.0 + 0.5 * 1.0, buf = d, expected = 1.0 - 0.1 * (d + 0.9 * buf);
  EXPECT_NEAR(p.item<double>(), expected, 1e-12);
  p.set_grad(tensor(std::vector<double>{1.0}, kDouble));
  opt.step();
  d = 1.0 + 0.5 * expected;
  buf = 0.9 * buf + d;
  expected -= 0.1 * (d + 0.9 * buf);
  EXPECT_NEAR(p.item<double>(), expected, 1e-12);
}

TEST(Adam, MatchesTheFormulaAndAdamWDecouples) {
  for (bool decoupled : {false, true}) {
    Tensor p = tensor(std::vector<double>{0.5}, kDouble).requires_grad_();
    std::unique_ptr<optim::Optimizer> opt =
        decoupled ? std::unique_ptr<optim::Optimizer>(new optim::AdamW({{"p", p}}, {.lr = 0.01, .weight_decay = 0.1}))
                  : std::unique_ptr<optim::Optimizer>(new optim::Adam({{"p", p}}, {.lr = 0.01, .weight_decay = 0.1}));
    double m = 0, v = 0, x = 0.5;
    for (int t = 1; t <= 3; ++t) {
      const double g = 0.3 * t;
      p.set_grad(tensor(std::vector<double>{g}, kDouble));
      opt->step();
      double gg = g;
      if (decoupled) x *= 1 - 0.01 * 0.1;
      else gg += 0.1 * x;
      m = 0.9 * m + 0.1 * gg;
      v = 0.999 * v + 0.001 * gg * gg;
      const double mh = m / (1 - std::pow(0.9, t)), vh = v / (1 - std::pow(0.999, t));
      x -= 0.01 * mh / (std::sqrt(vh) + 1e-8);
      EXPECT_NEAR(p.item<double>(), x, 1e-9) << "step " << t << " decoupled " << decoupled;
    }
  }
}

// The fused single-pass step (contiguous float32) against the op sequence it replaces (taken for
// the same values held transposed): the same bits in parameters and moments, with decoupled and
// L2 weight decay, and every element's path through the vector body and the scalar tail.
TEST(Adam, FusedStepIsBitwiseTheOpSequence) {
  for (bool decoupled : {false, true}) {
    Generator gen(17);
    Tensor init = randn({37, 45}, kFloat, &gen);
    Tensor fused = init.clone().requires_grad_();
    Tensor seq = init.t().contiguous().t().requires_grad_();  // non-contiguous: the op sequence
    ASSERT_FALSE(seq.is_contiguous());
    optim::AdamOptions o{.lr = 3e-3, .eps = 1e-6, .weight_decay = 0.05, .decoupled_weight_decay = decoupled};
    optim::Adam a(std::vector<std::pair<std::string, Tensor>>{{"p", fused}}, o);
    optim::Adam b(std::vector<std::pair<std::string, Tensor>>{{"p", seq}}, o);
    for (int t = 0; t < 5; ++t) {
      Tensor g = randn({37, 45}, kFloat, &gen) * (t + 1.0);
      fused.set_grad(g);
      seq.set_grad(g.t().contiguous().t());
      const uint64_t version = fused.storage()->version();
      a.step();
      b.step();
      EXPECT_GT(fused.storage()->version(), version) << "an in-place write bumps the version";
      ASSERT_TRUE(equal(fused, seq)) << "step " << t << " decoupled " << decoupled;
      EXPECT_TRUE(equal(a.state().at("p").at("exp_avg"), b.state().at("p").at("exp_avg")));
      EXPECT_TRUE(equal(a.state().at("p").at("exp_avg_sq"), b.state().at("p").at("exp_avg_sq")));
    }
  }
}

TEST(Optimizer, KeepsChannelsLastParametersChannelsLast) {
  Tensor w = rand({4, 3, 3, 3}).to(MemoryFormat::ChannelsLast).requires_grad_();
  optim::SGD opt({{"w", w}}, {.lr = 0.1, .momentum = 0.9});
  sum(w * w).backward();
  void* data = w.data();
  opt.step();
  EXPECT_EQ(w.data(), data);
  EXPECT_EQ(w.suggest_memory_format(), MemoryFormat::ChannelsLast);
  EXPECT_EQ(opt.state()["w"]["momentum_buffer"].strides(), w.strides());
  opt.zero_grad();
  EXPECT_FALSE(w.grad().defined());
}

TEST(Schedulers, StepAndCosineWarmup) {
  Tensor p = zeros({1}).requires_grad_();
  optim::SGD opt({{"p", p}}, {.lr = 1.0});
  optim::StepLR s(opt, 2, 0.5);
  s.step();
  EXPECT_DOUBLE_EQ(opt.lr(), 1.0);
  s.step();
  EXPECT_DOUBLE_EQ(opt.lr(), 0.5);
  optim::SGD opt2({{"p", p}}, {.lr = 1.0});
  optim::CosineWithWarmup c(opt2, 2, 10);
  EXPECT_DOUBLE_EQ(opt2.lr(), 0.5);
  c.step();
  EXPECT_DOUBLE_EQ(opt2.lr(), 1.0);
  for (int i = 0; i < 9; ++i) c.step();
  EXPECT_NEAR(opt2.lr(), 0.0, 1e-12);
}

TEST(ClipGradNorm, ScalesToMaxNorm) {
  Tensor a = zeros({2}).requires_grad_(), b = zeros({1}).requires_grad_();
  a.set_grad(tensor(std::vector<double>{3, 0}));
  b.set_grad(tensor(std::vector<double>{4}));
  EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b}, 1.0), 5.0, 1e-6);
  EXPECT_NEAR(nn::utils::grad_norm({a, b}), 1.0, 1e-5);
}

TEST(Training, SmallNetworkLearnsAndChannelsLastMatchesContiguous) {
  // Two identical models, one channels-last: the same steps give the same losses.
  std::vector<double> losses[2];
  for (int variant = 0; variant < 2; ++variant) {
    manual_seed(3);
    auto model = models::small_cnn(10, 1);
    if (variant == 1) model->to(MemoryFormat::ChannelsLast);
    optim::SGD opt(model->named_parameters(), {.lr = 0.05, .momentum = 0.9});
    Generator g(4);
    Tensor x = randn({16, 1, 28, 28}, kFloat, &g);
    Tensor y = tensor(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5});
    if (variant == 1) x = x.contiguous(MemoryFormat::ChannelsLast);
    for (int step = 0; step < 15; ++step) {
      Tensor loss = nn::functional::cross_entropy((*model)(x), y);
      opt.zero_grad();
      loss.backward();
      opt.step();
      losses[variant].push_back(loss.item<double>());
    }
  }
  EXPECT_LT(losses[0].back(), 0.5 * losses[0].front());
  for (size_t i = 0; i < losses[0].size(); ++i) EXPECT_NEAR(losses[0][i], losses[1][i], 1e-3 * (1 + losses[0][i]));
}

}  // namespace
}  // namespace strider

namespace strider {
namespace {

TEST(Training, GptLearnsARepeatingSequence) {
  manual_seed(5);
  models::GPT gpt({.vocab_size = 8, .block_size = 16, .n_layer = 2, .n_head = 2, .n_embd = 32});
  optim::AdamW opt(gpt.named_parameters(), {.lr = 3e-3, .weight_decay = 0.0});
  std::vector<int64_t> seq;
  for (int i = 0; i < 2 * 17; ++i) seq.push_back(i % 8);
  Tensor data = tensor(seq).reshape({2, 17});
  Tensor x = data.narrow(1, 0, 16).contiguous(), y = data.narrow(1, 1, 16).contiguous();
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    Tensor logits = gpt(x);
    Tensor loss = nn::functional::cross_entropy(logits.reshape({-1, 8}), y.reshape({-1}));
    opt.zero_grad();
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, 0.2 * first);
}

TEST(Gradcheck, AttentionBlock) {
  using V = std::vector<Tensor>;
  manual_seed(6);
  auto attn = std::make_shared<models::CausalSelfAttention>(models::GPTConfig{.n_head = 2, .n_embd = 4});
  attn->to(kDouble);
  Tensor x = testing::leaf({1, 3, 4}, 70);
  EXPECT_TRUE(testing::gradcheck([&](const V& v) { return (*attn)(v[0]); }, {x}));
}

}  // namespace
}  // namespace strider
