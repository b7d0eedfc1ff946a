// Activation checkpointing: the same loss and gradients, bit for bit, as without it (dropout on:
// the recomputation draws the same masks, and the run's generator continues as if nothing was
// recomputed); float64 finite differences through a checkpointed module; parameters get their
// gradients when no input requires one; the allocator's peak during a training step drops.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "support/gradcheck.h"

namespace strider {
namespace {

models::GPTConfig config(double dropout) {
  return {.vocab_size = 64, .block_size = 32, .n_layer = 3, .n_head = 2, .n_embd = 32, .dropout = dropout};
}

struct StepResult {
  double loss;
  std::vector<std::pair<std::string, Tensor>> grads;
  double after;  // a draw from the default generator after the step
};

StepResult train_step(bool checkpointed, double dropout, int64_t batch = 4, int64_t seq = 32) {
  manual_seed(3);
  auto gpt = std::make_shared<models::GPT>(config(dropout));
  if (checkpointed)
    EXPECT_EQ(nn::apply_activation_checkpointing(*gpt, [](nn::Module& m) { return m.type_name() == "Block"; }), 3);
  Generator data(5);
  Tensor tokens = (rand({batch, seq + 1}, {}, &data) * 64.0).to(kLong);
  Tensor x = tokens.narrow(1, 0, seq).contiguous(), y = tokens.narrow(1, 1, seq).contiguous();
  manual_seed(11);  // dropout's stream
  Tensor loss = nn::functional::cross_entropy((*gpt)(x).reshape({-1, 64}), y.reshape({-1}));
  loss.backward();
  StepResult r{loss.item<double>(), {}, rand({1}).item<double>()};
  for (auto& [name, p] : gpt->named_parameters()) r.grads.emplace_back(name, p.grad());
  return r;
}

TEST(ActivationCheckpointing, SameLossAndGradientsBitwiseWithDropout) {
  for (double dropout : {0.0, 0.2}) {
    const StepResult plain = train_step(false, dropout), ckpt = train_step(true, dropout);
    EXPECT_EQ(plain.loss, ckpt.loss) << dropout;
    EXPECT_EQ(plain.after, ckpt.after) << "the generator continues where the plain step leaves it";
    ASSERT_EQ(plain.grads.size(), ckpt.grads.size());
    for (size_t i = 0; i < plain.grads.size(); ++i) {
      ASSERT_TRUE(ckpt.grads[i].second.defined()) << ckpt.grads[i].first;
      EXPECT_TRUE(equal(plain.grads[i].second, ckpt.grads[i].second)) << plain.grads[i].first << " dropout " << dropout;
    }
  }
}

// A ResNet's checkpointed blocks hold batch norms: their recomputation in backward must not
// update the running statistics a second time, so two steps leave every buffer and parameter
// bitwise as plain training leaves them (num_batches_tracked was 2 per step; PyTorch's is too).
TEST(ActivationCheckpointing, BatchNormStateIsThatOfPlainTraining) {
  manual_seed(0);
  auto plain = models::fmnist_resnet();
  manual_seed(0);
  auto checkpointed = models::fmnist_resnet();
  ASSERT_GT(nn::apply_activation_checkpointing(*checkpointed, [](nn::Module& m) { return m.type_name() == "BasicBlock"; }), 0);
  Generator g(3);
  const Tensor x = randn({4, 1, 28, 28}, {}, &g), y = tensor(std::vector<int64_t>{1, 2, 3, 4});
  for (auto* model : {&plain, &checkpointed}) {
    optim::SGD opt((*model)->named_parameters(), {.lr = 0.1, .momentum = 0.9});
    for (int step = 0; step < 2; ++step) {
      opt.zero_grad();
      nn::functional::cross_entropy((**model)(x), y).backward();
      opt.step();
    }
  }
  const auto a = plain->state_dict(), b = checkpointed->state_dict();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) EXPECT_TRUE(equal(t, b.at(name))) << name;
  EXPECT_EQ(b.at("layer1.0.bn1.num_batches_tracked").item().to_long(), 2);
}

TEST(ActivationCheckpointing, TheAllocatorsPeakDropsDuringATrainingStep) {
  auto peak_of = [](bool checkpointed) {
    empty_cache();
    reset_peak_memory();
    const int64_t before = memory_stats().current_bytes;
    train_step(checkpointed, 0.1, 8, 32);
    return memory_stats().peak_bytes - before;
  };
  const int64_t plain = peak_of(false), ckpt = peak_of(true);
  EXPECT_LT(ckpt, plain * 3 / 4) << "plain " << plain << " bytes, checkpointed " << ckpt;
}

// A module of several ops with float64 parameters and two inputs, one of which needs no gradient.
class TwoInputs : public nn::Module {
 public:
  TwoInputs() : Module("TwoInputs") {
    Generator g(2);
    register_parameter("w", randn({3, 3}, kDouble, &g));
  }
  nn::Value forward_args(const nn::Args& a) override {
    const Tensor x = a[0].tensor(), scale = a[1].tensor();
    return nn::Value(std::vector<Tensor>{tanh(matmul(x, param("w"))) * scale, sum(x * x)});
  }
};

TEST(ActivationCheckpointing, FiniteDifferencesThroughACheckpointedModule) {
  auto m = std::make_shared<TwoInputs>();
  nn::checkpoint(*m);
  nn::checkpoint(*m);  // idempotent
  EXPECT_TRUE(nn::is_checkpointed(*m));
  Generator g(9);
  Tensor x = randn({2, 3}, kDouble, &g).requires_grad_(true);
  Tensor scale = randn({2, 3}, kDouble, &g);
  auto f = [&](const Tensor& in) {
    nn::Value out = (*m)(in, scale);
    return out[0].tensor() + out[1].tensor();
  };
  // The input's gradient through grad() (the checkpoint node's own output) ...
  EXPECT_TRUE(testing::gradcheck([&](const std::vector<Tensor>& v) { return f(v[0]); }, {x}));
  // ... and the parameter's, which the recomputation's backward accumulates into .grad (as
  // PyTorch's reentrant checkpoint does), against central differences of <v, f>.
  Tensor v = randn({2, 3}, kDouble, &g);
  Tensor w = m->param("w");
  m->zero_grad();  // gradcheck's backward passes above accumulated into it too
  sum(f(x) * v).backward();
  const Tensor analytic = w.grad().clone();
  NoGradGuard no_grad;
  for (int64_t k = 0; k < w.numel(); ++k) {
    double& e = testing::element(w, k);
    const double keep = e;
    e = keep + 1e-6;
    const double up = sum(f(x) * v).item<double>();
    e = keep - 1e-6;
    const double down = sum(f(x) * v).item<double>();
    e = keep;
    EXPECT_NEAR(testing::element(analytic, k), (up - down) / 2e-6, 1e-6) << k;
  }
}

TEST(ActivationCheckpointing, ParametersGetGradientsWhenNoInputRequiresOne) {
  for (bool checkpointed : {false, true}) {
    auto lin = std::make_shared<nn::Linear>(4, 2);
    if (checkpointed) nn::checkpoint(*lin);
    Tensor x = ones({3, 4});
    sum((*lin)(x)).backward();
    ASSERT_TRUE(lin->param("weight").grad().defined()) << checkpointed;
    EXPECT_EQ(lin->param("weight").grad().sum().item<float>(), 24.0f) << checkpointed;
  }
}

TEST(ActivationCheckpointing, RunsPlainlyWithoutGradModeAndNamesAnInputChangedInPlace) {
  auto lin = std::make_shared<nn::Linear>(4, 4);
  nn::checkpoint(*lin);
  {
    NoGradGuard no_grad;
    EXPECT_FALSE((*lin)(ones({2, 4})).requires_grad());
  }
  Tensor x = ones({2, 4}).requires_grad_(true);
  Tensor h = x * 2.0;
  Tensor y = (*lin)(h);
  {
    NoGradGuard no_grad;
    h.add_(ones({2, 4}));  // the checkpoint's saved input changes before backward
  }
  try {
    sum(y).backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint of Linear"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace strider
