// LR schedulers step for step against PyTorch 1.13 (tests/golden/generate_optim.py: get_last_lr()
// and each group's momentum or beta1, bit for bit, and after resuming in the middle), the
// strider-only warmup schedule, and misuse. ReduceLROnPlateau is in reduce_lr_on_plateau_test.cpp.
#include <cmath>
#include <functional>

#include <gtest/gtest.h>
#include <strider/strider.h>

#include "optim/pytorch_json.h"

#include "support/misuse.h"

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

// The generator's three_groups(): a [2], b [3], c [1] with lrs `lrs`.
std::unique_ptr<optim::Optimizer> three_groups(const std::string& name, std::vector<double> lrs) {
  std::vector<optim::ParamGroup> groups;
  const int64_t sizes[] = {2, 3, 1};
  const char* names[] = {"a", "b", "c"};
  for (size_t g = 0; g < 3; ++g)
    groups.push_back({.params = {{names[g], zeros({sizes[g]}, kDouble).requires_grad_()}}, .options = {.lr = lrs[g]}});
  return optim::make_optimizer(name, std::move(groups), optim::GroupOptions{});
}
std::unique_ptr<optim::Optimizer> sgd3() { return three_groups("sgd", {0.1, 0.05, 0.3}); }
std::unique_ptr<optim::Optimizer> adam3() { return three_groups("adam", {0.01, 0.02, 0.003}); }

// A scheduler and the members it composes (which must outlive it); the last one is stepped.
using Built = std::vector<std::unique_ptr<optim::LRScheduler>>;

template <typename... S>
Built built(std::unique_ptr<S>... s) {
  Built b;
  (b.push_back(std::move(s)), ...);
  return b;
}

std::vector<optim::LRScheduler*> members(const Built& b) {
  std::vector<optim::LRScheduler*> out;
  for (const auto& s : b) out.push_back(s.get());
  return out;
}

struct Case {
  std::function<std::unique_ptr<optim::Optimizer>()> optimizer;
  std::function<Built(optim::Optimizer&)> scheduler;
};

// A case of one scheduler.
template <typename Make>
Case one(std::function<std::unique_ptr<optim::Optimizer>()> optimizer, Make make) {
  return {std::move(optimizer), [make](optim::Optimizer& o) { return built(make(o)); }};
}

// Each generator case, built the same way here.
std::map<std::string, Case> cases() {
  using namespace optim;
  auto sequential = [](std::vector<int64_t> milestones, std::function<Built(Optimizer&)> make) {
    return [milestones, make](Optimizer& o) {
      Built b = make(o);
      b.push_back(std::make_unique<SequentialLR>(o, members(b), milestones));
      return b;
    };
  };
  auto chained = [](std::function<Built(Optimizer&)> make) {
    return [make](Optimizer& o) {
      Built b = make(o);
      b.push_back(std::make_unique<ChainedScheduler>(members(b)));
      return b;
    };
  };
  std::map<std::string, Case> all = {
      {"lambda_two_groups",
       one([] { return two_groups("sgd", 0.1, 0.05); },
        [](optim::Optimizer& o) {
          return std::make_unique<LambdaLR>(
              o, std::vector<LambdaLR::Factor>{[](int64_t s) { return std::pow(0.95, static_cast<double>(s)); },
                                               [](int64_t s) { return 1.0 / (1.0 + static_cast<double>(s)); }});
        })},
      {"lambda_one_factor",
       one([] { return two_groups("adamw", 0.01, 0.02); },
        [](optim::Optimizer& o) {
          return std::make_unique<LambdaLR>(o, [](int64_t s) { return std::min(1.0, (static_cast<double>(s) + 1) / 4.0); });
        })},
      {"step_lr",
       one([] { return two_groups("sgd", 1.0, 0.5); },
        [](optim::Optimizer& o) { return std::make_unique<optim::StepLR>(o, 3, 0.5); })},
      {"one_cycle_cos_sgd",
       one([] { return two_groups("sgd", 0.1, 0.05, {.momentum = 0.9}); },
        [](optim::Optimizer& o) { return std::make_unique<OneCycleLR>(o, optim::OneCycleLROptions{.max_lr = {0.1, 0.05}, .total_steps = 20}); })},
      {"one_cycle_linear_three_phase_adam",
       one([] { return two_groups("adam", 0.01, 0.02); },
        [](optim::Optimizer& o) {
          return std::make_unique<OneCycleLR>(
              o, optim::OneCycleLROptions{.max_lr = {0.01}, .total_steps = 17, .pct_start = 0.25,
                                          .anneal_strategy = "linear", .base_momentum = {0.8}, .max_momentum = {0.9},
                                          .div_factor = 10.0, .final_div_factor = 100.0, .three_phase = true});
        })},
      {"one_cycle_epochs_no_momentum",
       one([] { return two_groups("sgd", 0.1, 0.05); },
        [](optim::Optimizer& o) {
          return std::make_unique<OneCycleLR>(o, optim::OneCycleLROptions{.max_lr = {0.3, 0.2}, .epochs = 3,
                                                                         .steps_per_epoch = 5, .pct_start = 0.4,
                                                                         .cycle_momentum = false});
        })},
      {"one_cycle_sgd_without_momentum",
       one([] { return two_groups("sgd", 0.1, 0.05); },
        [](optim::Optimizer& o) {
          return std::make_unique<OneCycleLR>(o, optim::OneCycleLROptions{.max_lr = {0.1}, .total_steps = 10,
                                                                         .base_momentum = {0.85, 0.8},
                                                                         .max_momentum = {0.95, 0.9}});
        })},
      {"step_lr_gamma_tenth", one(sgd3, [](Optimizer& o) { return std::make_unique<StepLR>(o, 3, 0.1); })},
      {"multi_step_lr",
       one(sgd3, [](Optimizer& o) { return std::make_unique<MultiStepLR>(o, std::vector<int64_t>{4, 9, 17}, 0.3); })},
      {"exponential_lr", one(adam3, [](Optimizer& o) { return std::make_unique<ExponentialLR>(o, 0.9); })},
      {"constant_lr",
       one(sgd3, [](Optimizer& o) { return std::make_unique<ConstantLR>(o, ConstantLROptions{.factor = 0.25, .total_iters = 6}); })},
      {"constant_lr_defaults", one(adam3, [](Optimizer& o) { return std::make_unique<ConstantLR>(o); })},
      {"linear_lr_warmup", one(sgd3, [](Optimizer& o) {
         return std::make_unique<LinearLR>(o, LinearLROptions{.start_factor = 0.1, .end_factor = 0.9, .total_iters = 20});
       })},
      {"linear_lr_decay", one(adam3, [](Optimizer& o) {
         return std::make_unique<LinearLR>(o, LinearLROptions{.start_factor = 1.0, .end_factor = 0.05, .total_iters = 11});
       })},
      {"linear_lr_defaults", one(sgd3, [](Optimizer& o) { return std::make_unique<LinearLR>(o); })},
      {"polynomial_lr_square", one(sgd3, [](Optimizer& o) {
         return std::make_unique<PolynomialLR>(o, PolynomialLROptions{.total_iters = 20, .power = 2.0});
       })},
      {"polynomial_lr_defaults", one(adam3, [](Optimizer& o) { return std::make_unique<PolynomialLR>(o); })},
      {"cosine_annealing_eta_min", one(sgd3, [](Optimizer& o) { return std::make_unique<CosineAnnealingLR>(o, 10, 0.001); })},
      {"cosine_annealing_past_t_max", one(adam3, [](Optimizer& o) { return std::make_unique<CosineAnnealingLR>(o, 7); })},
      {"cosine_warm_restarts_t_mult",
       one(sgd3, [](Optimizer& o) { return std::make_unique<CosineAnnealingWarmRestarts>(o, 5, 2, 0.0005); })},
      {"cosine_warm_restarts", one(adam3, [](Optimizer& o) { return std::make_unique<CosineAnnealingWarmRestarts>(o, 7); })},
      {"sequential_linear_cosine",
       {sgd3, sequential({5}, [](Optimizer& o) {
          return built(std::make_unique<LinearLR>(o, LinearLROptions{.start_factor = 0.1, .total_iters = 5}),
                       std::make_unique<CosineAnnealingLR>(o, 20, 1e-4));
        })}},
      {"sequential_three",
       {adam3, sequential({6, 15}, [](Optimizer& o) {
          return built(std::make_unique<ConstantLR>(o, ConstantLROptions{.factor = 0.5, .total_iters = 3}),
                       std::make_unique<ExponentialLR>(o, 0.9), std::make_unique<StepLR>(o, 4, 0.5));
        })}},
      {"sequential_lambda_restarts",
       {sgd3, sequential({8}, [](Optimizer& o) {
          return built(std::make_unique<LambdaLR>(o, [](int64_t s) { return (static_cast<double>(s) + 1) / 8.0; }),
                       std::make_unique<CosineAnnealingWarmRestarts>(o, 4, 1, 0.01));
        })}},
      {"chained_constant_exponential",
       {sgd3, chained([](Optimizer& o) {
          return built(std::make_unique<ConstantLR>(o, ConstantLROptions{.factor = 0.5, .total_iters = 4}),
                       std::make_unique<ExponentialLR>(o, 0.95));
        })}},
      {"chained_cosine_multi_step",
       {adam3, chained([](Optimizer& o) {
          return built(std::make_unique<CosineAnnealingLR>(o, 12, 0.001),
                       std::make_unique<MultiStepLR>(o, std::vector<int64_t>{10, 20}, 0.5));
        })}},
  };
  return all;
}

double momentum_of(const optim::Optimizer& opt, size_t g) {
  const optim::GroupOptions o = opt.param_group_options(g);
  return o.beta1 ? *o.beta1 : *o.momentum;
}

// PyTorch's lrs bit for bit (Python's and our arithmetic round the same operations the same way;
// cos and pow are the same libm's), momentum or beta1 to 1e-14.
void expect_step(const optim::Optimizer& opt, const optim::LRScheduler& s, const json& want, const std::string& where) {
  const auto lrs = want.at("lr").get<std::vector<double>>();
  ASSERT_EQ(s.get_last_lr().size(), lrs.size()) << where;
  for (size_t g = 0; g < lrs.size(); ++g) {
    EXPECT_EQ(s.get_last_lr()[g], lrs[g]) << where << " group " << g;
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
    Built sched = c.scheduler(*opt);
    optim::LRScheduler& top = *sched.back();
    const json& values = want.at("values");
    expect_step(*opt, top, values[0], "after construction");
    for (size_t s = 1; s < values.size(); ++s) {
      opt->step();
      top.step();
      expect_step(*opt, top, values[s], "after step " + std::to_string(s));
    }
    // Each group's initial_lr as PyTorch records it in the group.
    const optim::OptimizerStateDict sd = opt->state_dict();
    for (size_t g = 0; g < sd.param_groups.size(); ++g)
      EXPECT_NEAR(sd.param_groups[g].initial_lr.value_or(-1), want.at("param_groups")[g].at("initial_lr").get<double>(), 1e-15);
    // Resuming in the middle as checkpoint::load does (a fresh optimizer and scheduler, then
    // set_last_step) gives that step's values and every later step's: the generator checked
    // that PyTorch's save/resume does too.
    auto resumed_opt = c.optimizer();
    Built resumed = c.scheduler(*resumed_opt);
    const size_t mid = values.size() / 2;
    resumed.back()->set_last_step(static_cast<int64_t>(mid));
    expect_step(*resumed_opt, *resumed.back(), values[mid], "resumed at step " + std::to_string(mid));
    for (size_t s = mid + 1; s < values.size(); ++s) {
      resumed_opt->step();
      resumed.back()->step();
      expect_step(*resumed_opt, *resumed.back(), values[s], "step " + std::to_string(s) + " after resuming");
    }
    // And lr_at, the closed form, is the same schedule to rounding.
    for (size_t s = 0; s < values.size(); ++s)
      for (size_t g = 0; g < opt->num_param_groups(); ++g) {
        const double lr = values[s].at("lr")[g].get<double>();
        EXPECT_NEAR(top.lr_at(static_cast<int64_t>(s), g), lr, 1e-15 + 1e-12 * std::abs(lr)) << "lr_at " << s;
      }
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
    s.set_last_step(2);  // resuming replays the schedule from the base lr: 0.1 * 0.5 at step 2
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

std::string message(const std::function<void()>& f) { return testing::error_message(f); }

// Each bad argument is an Error naming the scheduler and the value (and saying what to pass).
TEST(Schedulers, BadArgumentsAreErrorsNamingTheSchedulerAndValue) {
  using namespace optim;
  auto opt = sgd3();
  auto other = sgd3();
  struct Bad {
    const char* what;
    std::function<void()> build;
    std::vector<std::string> says;
  };
  const std::vector<Bad> bad = {
      {"StepLR gamma 0", [&] { StepLR s(*opt, 2, 0.0); }, {"[StepLR]", "gamma", "got 0"}},
      {"MultiStepLR gamma -0.5", [&] { MultiStepLR s(*opt, {2, 4}, -0.5); }, {"[MultiStepLR]", "gamma", "-0.5"}},
      {"MultiStepLR milestones 5, 3", [&] { MultiStepLR s(*opt, {1, 5, 3}); },
       {"[MultiStepLR]", "increasing", "5 then 3"}},
      {"MultiStepLR repeated milestone", [&] { MultiStepLR s(*opt, {4, 4}); }, {"[MultiStepLR]", "4 then 4"}},
      {"MultiStepLR negative milestone", [&] { MultiStepLR s(*opt, {-1}); }, {"[MultiStepLR]", "-1"}},
      {"ExponentialLR gamma 0", [&] { ExponentialLR s(*opt, 0.0); }, {"[ExponentialLR]", "gamma", "got 0"}},
      {"ExponentialLR gamma NaN", [&] { ExponentialLR s(*opt, std::nan("")); }, {"[ExponentialLR]", "nan"}},
      {"ConstantLR factor 1.5", [&] { ConstantLR s(*opt, {.factor = 1.5}); }, {"[ConstantLR]", "factor", "1.5"}},
      {"ConstantLR factor 0", [&] { ConstantLR s(*opt, {.factor = 0.0}); }, {"[ConstantLR]", "factor", "got 0"}},
      {"ConstantLR total_iters 0", [&] { ConstantLR s(*opt, {.total_iters = 0}); }, {"[ConstantLR]", "total_iters", "got 0"}},
      {"LinearLR start_factor 0", [&] { LinearLR s(*opt, {.start_factor = 0.0}); }, {"[LinearLR]", "start_factor", "got 0"}},
      {"LinearLR end_factor 2", [&] { LinearLR s(*opt, {.end_factor = 2.0}); }, {"[LinearLR]", "end_factor", "got 2"}},
      {"LinearLR total_iters -3", [&] { LinearLR s(*opt, {.total_iters = -3}); }, {"[LinearLR]", "total_iters", "-3"}},
      {"PolynomialLR total_iters 0", [&] { PolynomialLR s(*opt, {.total_iters = 0}); }, {"[PolynomialLR]", "total_iters"}},
      {"PolynomialLR power -1", [&] { PolynomialLR s(*opt, {.power = -1.0}); }, {"[PolynomialLR]", "power", "-1"}},
      {"CosineAnnealingLR T_max 0", [&] { CosineAnnealingLR s(*opt, 0); }, {"[CosineAnnealingLR]", "T_max", "got 0"}},
      {"CosineAnnealingLR eta_min -1", [&] { CosineAnnealingLR s(*opt, 5, -1.0); }, {"[CosineAnnealingLR]", "eta_min", "-1"}},
      {"CosineAnnealingWarmRestarts T_0 0", [&] { CosineAnnealingWarmRestarts s(*opt, 0); },
       {"[CosineAnnealingWarmRestarts]", "T_0", "got 0"}},
      {"CosineAnnealingWarmRestarts T_mult 0", [&] { CosineAnnealingWarmRestarts s(*opt, 3, 0); },
       {"[CosineAnnealingWarmRestarts]", "T_mult", "got 0"}},
  };
  for (const Bad& b : bad) {
    const std::string m = message(b.build);
    ASSERT_FALSE(m.empty()) << b.what << " was accepted";
    for (const std::string& part : b.says) EXPECT_NE(m.find(part), std::string::npos) << b.what << ": " << m;
  }
  // The compositions.
  StepLR mine(*opt, 3), theirs(*other, 3);
  ExponentialLR decay(*opt, 0.9);
  EXPECT_NE(message([&] { SequentialLR s(*opt, {&mine, &theirs}, {4}); }).find("scheduler 1 is bound to another "
                                                                              "optimizer"), std::string::npos);
  EXPECT_NE(message([&] { ChainedScheduler s({&mine, &theirs}); }).find("scheduler 1 is bound to another optimizer"),
            std::string::npos);
  EXPECT_NE(message([&] { SequentialLR s(*opt, {&mine, &decay}, {}); }).find("one milestone fewer"), std::string::npos);
  EXPECT_NE(message([&] { SequentialLR s(*opt, {&mine, &decay}, {0}); }).find("milestone 0 is 0"), std::string::npos);
  EXPECT_NE(message([&] { SequentialLR s(*opt, {&mine, &decay, &mine}, {5, 2}); }).find("listed twice"),
            std::string::npos);
  StepLR third(*opt, 2);
  EXPECT_NE(message([&] { SequentialLR s(*opt, {&mine, &decay, &third}, {5, 2}); }).find("5 then 2"), std::string::npos);
  EXPECT_NE(message([&] { SequentialLR s(*opt, {}, {}); }).find("got no schedulers"), std::string::npos);
  EXPECT_NE(message([&] { ChainedScheduler s({}); }).find("got no schedulers"), std::string::npos);
  ChainedScheduler chain({&mine, &decay});
  EXPECT_NE(message([&] { SequentialLR s(*opt, {&chain, &third}, {3}); }).find("is itself a SequentialLR or "
                                                                              "ChainedScheduler"), std::string::npos);
  decay.step();
  EXPECT_NE(message([&] { ChainedScheduler s({&mine, &decay}); }).find("scheduler 1 is at step 1 but scheduler 0 at "
                                                                      "step 0"), std::string::npos);
}

// A composition restores its members: stepping a SequentialLR on after set_last_step (past a
// milestone, and back before it) steps the right member from the right place.
TEST(SequentialLR, SetLastStepMovesBothWays) {
  auto opt = sgd3();
  optim::LinearLR warm(*opt, {.start_factor = 0.25, .total_iters = 4});
  optim::CosineAnnealingLR decay(*opt, 10, 0.001);
  optim::SequentialLR s(*opt, {&warm, &decay}, {4});
  std::vector<std::vector<double>> lrs = {s.get_last_lr()};
  for (int i = 0; i < 20; ++i) {
    s.step();
    lrs.push_back(s.get_last_lr());
  }
  for (int64_t at : {13, 2, 4, 0, 19}) {
    s.set_last_step(at);
    EXPECT_EQ(s.get_last_lr(), lrs[at]) << "set_last_step(" << at << ")";
    EXPECT_EQ(s.last_step(), at);
    s.step();
    EXPECT_EQ(s.get_last_lr(), lrs[at + 1]) << "the step after set_last_step(" << at << ")";
  }
}

}  // namespace
}  // namespace strider
