// ReduceLROnPlateau against PyTorch 1.13 (tests/golden/generate_optim.py "plateau": each group's
// lr and the counters after every step(metric), bit for bit, and after resuming in the middle
// from state()), and its argument checks.
#include <cmath>
#include <functional>
#include <limits>

#include <gtest/gtest.h>
#include <strider/strider.h>

#include "optim/pytorch_json.h"

#include "support/misuse.h"

namespace strider {
namespace {

using nlohmann::json;

// The generator's three_groups() with SGD at lrs 0.1, 0.05, 0.3 or Adam at 0.01, 0.02, 0.003.
std::unique_ptr<optim::Optimizer> three_groups(bool adam) {
  const std::vector<double> lrs = adam ? std::vector<double>{0.01, 0.02, 0.003} : std::vector<double>{0.1, 0.05, 0.3};
  std::vector<optim::ParamGroup> groups;
  const int64_t sizes[] = {2, 3, 1};
  const char* names[] = {"a", "b", "c"};
  for (size_t g = 0; g < 3; ++g)
    groups.push_back({.params = {{names[g], zeros({sizes[g]}, kDouble).requires_grad_()}}, .options = {.lr = lrs[g]}});
  return optim::make_optimizer(adam ? "adam" : "sgd", std::move(groups), optim::GroupOptions{});
}

// "nan", "inf", "-inf" (JSON has none of them) or a number.
double number(const json& j) { return j.is_string() ? std::stod(j.get<std::string>()) : j.get<double>(); }

optim::ReduceLROnPlateauOptions options_of(const json& o) {
  optim::ReduceLROnPlateauOptions r;
  for (auto& [k, v] : o.items()) {
    if (k == "mode") r.mode = v.get<std::string>();
    else if (k == "factor") r.factor = v.get<double>();
    else if (k == "patience") r.patience = v.get<int64_t>();
    else if (k == "threshold") r.threshold = v.get<double>();
    else if (k == "threshold_mode") r.threshold_mode = v.get<std::string>();
    else if (k == "cooldown") r.cooldown = v.get<int64_t>();
    else if (k == "min_lr") r.min_lr = v.is_array() ? v.get<std::vector<double>>() : std::vector<double>{v.get<double>()};
    else if (k == "eps") r.eps = v.get<double>();
    else ADD_FAILURE() << "ReduceLROnPlateau option '" << k << "' has no strider counterpart";
  }
  return r;
}

void expect_step(const optim::ReduceLROnPlateau& s, const optim::Optimizer& opt, const json& want, const std::string& where) {
  const auto lrs = want.at("lr").get<std::vector<double>>();
  ASSERT_EQ(s.get_last_lr().size(), lrs.size()) << where;
  for (size_t g = 0; g < lrs.size(); ++g) {
    EXPECT_EQ(s.get_last_lr()[g], lrs[g]) << where << " group " << g;
    EXPECT_EQ(opt.lr(g), lrs[g]) << where << " group " << g;
  }
  const json& st = want.at("state");
  const optim::ReduceLROnPlateau::State got = s.state();
  EXPECT_EQ(got.best, number(st.at("best"))) << where;
  EXPECT_EQ(got.num_bad_epochs, st.at("num_bad_epochs").get<int64_t>()) << where;
  EXPECT_EQ(got.cooldown_counter, st.at("cooldown_counter").get<int64_t>()) << where;
  EXPECT_EQ(got.last_step, st.at("last_epoch").get<int64_t>()) << where;
}

TEST(ReduceLROnPlateauGolden, MatchesPyTorchStepForStepAndAcrossAResume) {
  for (auto& [name, c] : testing::optim_golden().at("plateau").items()) {
    SCOPED_TRACE(name);
    const bool adam = name.rfind("max", 0) == 0;  // the generator's "max" cases run on ADAM3
    const optim::ReduceLROnPlateauOptions o = options_of(c.at("options"));
    std::vector<double> metrics;
    for (const json& m : c.at("metrics")) metrics.push_back(number(m));
    const json& steps = c.at("steps");
    ASSERT_EQ(steps.size(), metrics.size());
    auto opt = three_groups(adam);
    optim::ReduceLROnPlateau s(*opt, o);
    const size_t half = metrics.size() / 2;
    optim::ReduceLROnPlateau::State saved;
    for (size_t i = 0; i < metrics.size(); ++i) {
      s.step(metrics[i]);
      expect_step(s, *opt, steps[i], "step " + std::to_string(i + 1));
      if (i + 1 == half) saved = s.state();
    }
    // A fresh optimizer and scheduler given the state saved after `half` steps carry on as PyTorch's resumed run.
    auto resumed_opt = three_groups(adam);
    optim::ReduceLROnPlateau resumed(*resumed_opt, o);
    resumed.load_state(saved);
    for (size_t i = half; i < metrics.size(); ++i) {
      resumed.step(metrics[i]);
      expect_step(resumed, *resumed_opt, steps[i], "step " + std::to_string(i + 1) + " after resuming");
    }
  }
}

std::string message(const std::function<void()>& f) { return testing::error_message(f); }

TEST(ReduceLROnPlateau, BadArgumentsAreErrorsNamingTheValue) {
  auto opt = three_groups(false);
  using O = optim::ReduceLROnPlateauOptions;
  auto build = [&](O o) { return message([&] { optim::ReduceLROnPlateau s(*opt, std::move(o)); }); };
  struct Bad {
    O options;
    std::vector<std::string> says;
  };
  const std::vector<Bad> bad = {
      {{.factor = 1.0}, {"[ReduceLROnPlateau]", "factor must be < 1, got 1"}},
      {{.factor = 2.0}, {"factor must be < 1, got 2"}},
      {{.factor = 0.0}, {"factor must be > 0, got 0"}},
      {{.mode = "minimum"}, {"mode", "\"minimum\""}},
      {{.threshold_mode = "relative"}, {"threshold_mode", "\"relative\""}},
      {{.patience = -1}, {"patience", "-1"}},
      {{.threshold = -1e-4}, {"threshold", "-0.0001"}},
      {{.cooldown = -2}, {"cooldown", "-2"}},
      {{.min_lr = {0.0, 0.1}}, {"expected 3 min_lrs", "got 2"}},
      {{.min_lr = {-0.1}}, {"min_lr", "-0.1"}},
      {{.eps = -1.0}, {"eps", "-1"}},
  };
  for (const Bad& b : bad) {
    const std::string m = build(b.options);
    ASSERT_FALSE(m.empty()) << b.says.front() << " was accepted";
    for (const std::string& part : b.says) EXPECT_NE(m.find(part), std::string::npos) << m;
  }
  optim::ReduceLROnPlateau s(*opt, {.cooldown = 1});
  optim::ReduceLROnPlateau::State st = s.state();
  EXPECT_EQ(st.best, std::numeric_limits<double>::infinity());
  st.lrs.pop_back();
  EXPECT_NE(message([&] { s.load_state(st); }).find("lrs for 2 param groups but the optimizer has 3"), std::string::npos);
  st = s.state();
  st.cooldown_counter = 5;
  EXPECT_NE(message([&] { s.load_state(st); }).find("cooldown 1"), std::string::npos);
  EXPECT_EQ(s.state().cooldown_counter, 0) << "a refused state changed nothing";
}

}  // namespace
}  // namespace strider
