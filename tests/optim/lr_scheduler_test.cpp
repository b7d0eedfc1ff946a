// LR schedulers: LambdaLR, StepLR and OneCycleLR step for step against PyTorch 1.13
// (tests/golden/generate_optim.py: get_last_lr() and each group's momentum or beta1), the
// strider-only warmup schedule, resuming, and misuse.
#include <cmath>
#include <functional>

#include <gtest/gtest.h>
#include <strider/strider.h>

#include "optim/pytorch_json.h"

namespace strider {
namespace {

using nlohmann::json;

// The generator's two_groups(): a [2] with the optimizer's options, b [3] with lr `lr1`.
std::unique_ptr<optim::Optimizer> two_groups(const std::string& name, double lr, double lr1,
                                             optim::GroupOptions options = {}) {
  options.lr = lr;
  return optim::make_optimizer(name,
                               {{.params = {{"a", zeros({2}, kDouble).requires_grad_()}}},
                                {.params = {{"b", zeros({3}, kDouble).requires_grad_()}}, .options = {.lr = lr1}}},
                               options);
}

struct Case {
  std::function<std::unique_ptr<optim::Optimizer>()> optimizer;
  std::function<std::unique_ptr<optim::LRScheduler>(optim::Optimizer&)> scheduler;
};

// Each generator case, built the same way here.
std::map<std::string, Case> cases() {
  using optim::LambdaLR;
  using optim::OneCycleLR;
  return {
      {"lambda_two_groups",
       {[] { return two_groups("sgd", 0.1, 0.05); },
        [](optim::Optimizer& o) {
          return std::make_unique<LambdaLR>(
              o, std::vector<LambdaLR::Factor>{[](int64_t s) { return std::pow(0.95, static_cast<double>(s)); },
                                               [](int64_t s) { return 1.0 / (1.0 + static_cast<double>(s)); }});
        }}},
      {"lambda_one_factor",
       {[] { return two_groups("adamw", 0.01, 0.02); },
        [](optim::Optimizer& o) {
          return std::make_unique<LambdaLR>(o, [](int64_t s) { return std::min(1.0, (static_cast<double>(s) + 1) / 4.0); });
        }}},
      {"step_lr",
       {[] { return two_groups("sgd", 1.0, 0.5); },
        [](optim::Optimizer& o) { return std::make_unique<optim::StepLR>(o, 3, 0.5); }}},
      {"one_cycle_cos_sgd",
       {[] { return two_groups("sgd", 0.1, 0.05, {.momentum = 0.9}); },
        [](optim::Optimizer& o) { return std::make_unique<OneCycleLR>(o, optim::OneCycleLROptions{.max_lr = {0.1, 0.05}, .total_steps = 20}); }}},
      {"one_cycle_linear_three_phase_adam",
       {[] { return two_groups("adam", 0.01, 0.02); },
        [](optim::Optimizer& o) {
          return std::make_unique<OneCycleLR>(
              o, optim::OneCycleLROptions{.max_lr = {0.01}, .total_steps = 17, .pct_start = 0.25,
                                          .anneal_strategy = "linear", .base_momentum = {0.8}, .max_momentum = {0.9},
                                          .div_factor = 10.0, .final_div_factor = 100.0, .three_phase = true});
        }}},
      {"one_cycle_epochs_no_momentum",
       {[] { return two_groups("sgd", 0.1, 0.05); },
        [](optim::Optimizer& o) {
          return std::make_unique<OneCycleLR>(o, optim::OneCycleLROptions{.max_lr = {0.3, 0.2}, .epochs = 3,
                                                                         .steps_per_epoch = 5, .pct_start = 0.4,
                                                                         .cycle_momentum = false});
        }}},
      {"one_cycle_sgd_without_momentum",
       {[] { return two_groups("sgd", 0.1, 0.05); },
        [](optim::Optimizer& o) {
          return std::make_unique<OneCycleLR>(o, optim::OneCycleLROptions{.max_lr = {0.1}, .total_steps = 10,
                                                                         .base_momentum = {0.85, 0.8},
                                                                         .max_momentum = {0.95, 0.9}});
        }}},
  };
}

double momentum_of(const optim::Optimizer& opt, size_t g) {
  const optim::GroupOptions o = opt.param_group_options(g);
  return o.beta1 ? *o.beta1 : *o.momentum;
}

void expect_step(const optim::Optimizer& opt, const optim::LRScheduler& s, const json& want, const std::string& where) {
  const auto lrs = want.at("lr").get<std::vector<double>>();
  ASSERT_EQ(s.get_last_lr().size(), lrs.size()) << where;
  for (size_t g = 0; g < lrs.size(); ++g) {
    EXPECT_NEAR(s.get_last_lr()[g], lrs[g], 1e-15 + 1e-13 * lrs[g]) << where << " group " << g;
    EXPECT_EQ(opt.lr(g), s.get_last_lr()[g]) << where;
    if (want.contains("momentum")) {
      EXPECT_NEAR(momentum_of(opt, g), want.at("momentum")[g].get<double>(), 1e-14) << where << " momentum, group " << g;
    }
  }
}

TEST(SchedulerGolden, MatchesPyTorchStepForStep) {
  const auto all = cases();
  for (auto& [name, want] : testing::optim_golden().at("schedulers").items()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(all.count(name)) << "a generator case without its C++ twin";
    const Case& c = all.at(name);
    auto opt = c.optimizer();
    auto sched = c.scheduler(*opt);
    const json& values = want.at("values");
    expect_step(*opt, *sched, values[0], "after construction");
    for (size_t s = 1; s < values.size(); ++s) {
      opt->step();
      sched->step();
      expect_step(*opt, *sched, values[s], "after step " + std::to_string(s));
    }
    // Each group's initial_lr as PyTorch records it in the group.
    const optim::OptimizerStateDict sd = opt->state_dict();
    for (size_t g = 0; g < sd.param_groups.size(); ++g)
      EXPECT_NEAR(sd.param_groups[g].initial_lr.value_or(-1), want.at("param_groups")[g].at("initial_lr").get<double>(), 1e-15);
    // Resuming anywhere gives that step's values.
    auto resumed_opt = c.optimizer();
    auto resumed = c.scheduler(*resumed_opt);
    const size_t mid = values.size() / 2;
    resumed->set_last_step(static_cast<int64_t>(mid));
    expect_step(*resumed_opt, *resumed, values[mid], "resumed at step " + std::to_string(mid));
  }
}

TEST(OneCycleLR, SteppingPastTheEndAndBadOptionsAreErrors) {
  auto opt = two_groups("sgd", 0.1, 0.05, {.momentum = 0.9});
  optim::OneCycleLR s(*opt, {.max_lr = {0.1}, .total_steps = 4});
  for (int i = 0; i < 4; ++i) s.step();  // PyTorch allows last_epoch == total_steps
  EXPECT_THROW(s.step(), Error);
  auto make = [&](optim::OneCycleLROptions o) { optim::OneCycleLR bad(*opt, std::move(o)); };
  EXPECT_THROW(make({.total_steps = 4}), Error) << "no max_lr";
  EXPECT_THROW(make({.max_lr = {0.1, 0.2, 0.3}, .total_steps = 4}), Error) << "three max_lr for two groups";
  EXPECT_THROW(make({.max_lr = {0.1}}), Error) << "no length";
  EXPECT_THROW(make({.max_lr = {0.1}, .total_steps = 4, .pct_start = 1.5}), Error);
  EXPECT_THROW(make({.max_lr = {0.1}, .total_steps = 4, .anneal_strategy = "cosine"}), Error);
  EXPECT_THROW(make({.max_lr = {0.1}, .total_steps = 10, .pct_start = 0.1}), Error) << "a first phase of no steps";
}

TEST(LambdaLR, NeedsOneFactorPerGroup) {
  auto opt = two_groups("sgd", 0.1, 0.05);
  EXPECT_THROW(optim::LambdaLR(*opt, std::vector<optim::LambdaLR::Factor>{[](int64_t) { return 1.0; }}), Error);
}

// The second scheduler on an optimizer starts from the first one's initial_lr, as in PyTorch.
TEST(Schedulers, LaterSchedulersStartFromInitialLr) {
  auto opt = two_groups("sgd", 1.0, 0.5);
  optim::StepLR first(*opt, 1, 0.5);
  first.step();
  EXPECT_EQ(opt->lr(0), 0.5);
  optim::LambdaLR second(*opt, [](int64_t) { return 1.0; });
  EXPECT_EQ(second.base_lrs(), (std::vector<double>{1.0, 0.5}));
  EXPECT_EQ(opt->lr(1), 0.5);
}

// StepLR is chainable, as PyTorch's: it scales the current lr, so it composes with LambdaLR, a
// StepLR built after another keeps the decayed lr, and an lr set by hand carries on. The values
// are PyTorch 1.13's (SGD on one [2] parameter at lr 0.1, each scheduler stepped after
// opt.step(); printed by /usr/bin/python3 with torch.optim.lr_scheduler's LambdaLR and StepLR).
TEST(Schedulers, StepLRChainsLikePyTorch) {
  auto one_group = [] {
    return optim::make_optimizer("sgd", std::vector<optim::ParamGroup>{{.params = {{"a", zeros({2}, kDouble).requires_grad_()}}}},
                                 optim::GroupOptions{.lr = 0.1});
  };
  {  // LambdaLR(0.9^e) then StepLR(2, 0.5)
    auto opt = one_group();
    optim::LambdaLR a(*opt, [](int64_t e) { return std::pow(0.9, static_cast<double>(e)); });
    optim::StepLR b(*opt, 2, 0.5);
    std::vector<double> lrs = {opt->lr(0)};
    for (int i = 0; i < 5; ++i) {
      a.step();
      b.step();
      lrs.push_back(opt->lr(0));
    }
    const std::vector<double> torch = {0.1, 0.09000000000000001, 0.04050000000000001, 0.0729, 0.032805,
                                       0.05904900000000001};
    for (size_t i = 0; i < torch.size(); ++i) EXPECT_DOUBLE_EQ(lrs[i], torch[i]) << "step " << i;
  }
  {  // StepLR(1, 0.5) stepped once, then a second StepLR(2, 0.1)
    auto opt = one_group();
    optim::StepLR first(*opt, 1, 0.5);
    first.step();
    optim::StepLR second(*opt, 2, 0.1);
    std::vector<double> lrs = {opt->lr(0)};
    for (int i = 0; i < 3; ++i) {
      second.step();
      lrs.push_back(opt->lr(0));
    }
    const std::vector<double> torch = {0.05, 0.05, 0.005000000000000001, 0.005000000000000001};
    for (size_t i = 0; i < torch.size(); ++i) EXPECT_DOUBLE_EQ(lrs[i], torch[i]) << "step " << i;
    EXPECT_EQ(second.base_lrs(), std::vector<double>{0.1}) << "its base is still the initial_lr";
  }
  {  // StepLR(2, 0.5), one step, then the lr set by hand to 0.3
    auto opt = one_group();
    optim::StepLR s(*opt, 2, 0.5);
    s.step();
    opt->set_lr(0, 0.3);
    std::vector<double> lrs;
    for (int i = 0; i < 3; ++i) {
      s.step();
      lrs.push_back(opt->lr(0));
    }
    EXPECT_EQ(lrs, (std::vector<double>{0.15, 0.15, 0.075}));
    s.set_last_step(2);  // resuming uses the closed form: base * gamma^(2 / 2)
    EXPECT_DOUBLE_EQ(opt->lr(0), 0.05);
  }
}

// Not a PyTorch schedule: its comment says what it does; this checks the comment.
TEST(Schedulers, CosineWithWarmupStartsAtBaseOverWarmupPerGroup) {
  auto opt = two_groups("sgd", 1.0, 0.5);
  optim::CosineWithWarmup c(*opt, 4, 10, 0.01);
  EXPECT_DOUBLE_EQ(opt->lr(0), 0.25);  // base * 1 / warmup at step 0, not 0
  EXPECT_DOUBLE_EQ(opt->lr(1), 0.125);
  for (int i = 0; i < 3; ++i) c.step();
  EXPECT_DOUBLE_EQ(opt->lr(0), 1.0);   // base at step warmup - 1
  c.step();
  EXPECT_DOUBLE_EQ(opt->lr(0), 1.0);   // the cosine starts at base
  for (int i = 0; i < 6; ++i) c.step();
  EXPECT_NEAR(opt->lr(0), 0.01, 1e-12);
  EXPECT_NEAR(opt->lr(1), 0.01, 1e-12);  // min_lr is the same for every group
  c.set_last_step(0);
  EXPECT_DOUBLE_EQ(opt->lr(0), 0.25) << "resuming at step 0 is step 0's lr, as construction set it";
}

}  // namespace
}  // namespace strider
