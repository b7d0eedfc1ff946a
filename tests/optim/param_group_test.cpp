// Param groups (per-group options, add_param_group, wrong options named), PyTorch's defaults
// (AdamW's weight decay, SGD's required lr), per-parameter step counts, and make_optimizer's
// name table.
#include <cmath>

#include <gtest/gtest.h>
#include <strider/strider.h>

namespace strider {
namespace {

Tensor scalar(double v) { return tensor(std::vector<double>{v}, kDouble).requires_grad_(); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(OptimizerDefaults, MatchPyTorch) {
  EXPECT_EQ(optim::AdamWOptions{}.weight_decay, 0.01);
  EXPECT_EQ(optim::AdamOptions{}.weight_decay, 0.0);
  Tensor p = scalar(1.0);
  optim::AdamW adamw({{"p", p}});
  const optim::GroupOptions o = adamw.param_group_options(0);
  EXPECT_EQ(o.lr, 1e-3);
  EXPECT_EQ(o.beta1, 0.9);
  EXPECT_EQ(o.beta2, 0.999);
  EXPECT_EQ(o.eps, 1e-8);
  EXPECT_EQ(o.weight_decay, 0.01);
  EXPECT_EQ(o.amsgrad, false);
  EXPECT_EQ(o.maximize, false);
  EXPECT_FALSE(o.momentum.has_value()) << "AdamW has no momentum option";
  EXPECT_EQ(optim::make_optimizer("adamw", {{"p", p}})->param_group_options(0).weight_decay, 0.01);
  EXPECT_EQ(optim::make_optimizer("adam", {{"p", p}})->param_group_options(0).weight_decay, 0.0);
  // PyTorch 1.13's SGD has no default lr.
  EXPECT_NE(error_of([&] { optim::SGD({{"p", p}}, {.momentum = 0.9}); }).find("no lr"), std::string::npos);
  EXPECT_THROW(optim::make_optimizer("sgd", {{"p", p}}), Error);
  optim::SGD sgd({{"p", p}}, {.lr = 0.1});
  const optim::GroupOptions s = sgd.param_group_options(0);
  EXPECT_EQ(s.momentum, 0.0);
  EXPECT_EQ(s.dampening, 0.0);
  EXPECT_EQ(s.weight_decay, 0.0);
  EXPECT_EQ(s.nesterov, false);
  EXPECT_EQ(s.maximize, false);
}

// Decay on the weights, none on the biases: only group 0's parameter shrinks by lr * wd.
TEST(ParamGroups, PerGroupWeightDecayAndLr) {
  Tensor w = scalar(2.0), b = scalar(2.0);
  optim::AdamW opt({{.params = {{"w", w}}}, {.params = {{"b", b}}, .options = {.lr = 0.1, .weight_decay = 0.0}}},
                   {.lr = 0.01, .weight_decay = 0.5});
  w.set_grad(tensor(std::vector<double>{0.0}, kDouble));
  b.set_grad(tensor(std::vector<double>{0.0}, kDouble));
  opt.step();
  EXPECT_DOUBLE_EQ(w.item<double>(), 2.0 * (1 - 0.01 * 0.5));
  EXPECT_DOUBLE_EQ(b.item<double>(), 2.0);
  ASSERT_EQ(opt.num_param_groups(), 2u);
  EXPECT_EQ(opt.lr(0), 0.01);
  EXPECT_EQ(opt.lr(1), 0.1);
  const auto groups = opt.param_groups();
  ASSERT_EQ(groups[1].params.size(), 1u);
  EXPECT_EQ(groups[1].params[0].first, "b");
  EXPECT_EQ(groups[1].options.weight_decay, 0.0);
  EXPECT_EQ(groups[1].options.eps, 1e-8) << "unset options come from the optimizer's";
  EXPECT_EQ(opt.group_of(1), 1u);
  opt.set_group_options(1, {.weight_decay = 0.25});
  EXPECT_EQ(opt.param_group_options(1).weight_decay, 0.25);
  EXPECT_EQ(opt.param_group_options(1).lr, 0.1);
  opt.set_lr(0.3);
  EXPECT_EQ(opt.lr(0), 0.3);
  EXPECT_EQ(opt.lr(1), 0.3);
}

TEST(ParamGroups, WrongOptionsAndDuplicatesAreNamedErrors) {
  Tensor w = scalar(1.0), b = scalar(1.0);
  const std::string unknown =
      error_of([&] { optim::SGD({{.params = {{"w", w}}, .options = {.beta1 = 0.5}}}, {.lr = 0.1}); });
  EXPECT_NE(unknown.find("param group 0 sets 'beta1'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("lr, momentum, dampening, weight_decay, nesterov, maximize"), std::string::npos) << unknown;
  EXPECT_NE(error_of([&] { optim::make_optimizer("adamw", {{"w", w}}, {.momentum = 0.9}); }).find("'momentum'"),
            std::string::npos);
  const std::string twice =
      error_of([&] { optim::SGD({{.params = {{"w", w}}}, {.params = {{"w2", w}}}}, {.lr = 0.1}); });
  EXPECT_NE(twice.find("same tensor as parameter 'w'"), std::string::npos) << twice;
  EXPECT_THROW(optim::SGD({{.params = {{"w", w}}}, {.params = {{"w", b}}}}, {.lr = 0.1}), Error) << "a name twice";
  // A tensor computed from a leaf never receives a gradient: stepping it would do nothing.
  Tensor leaf = ones({3}).requires_grad_();
  const Tensor doubled = leaf * 2.0;
  const std::string non_leaf = error_of([&] { optim::SGD({{"w", doubled}}, {.lr = 0.1}); });
  EXPECT_NE(non_leaf.find("parameter 'w' of param group 0 is not a leaf tensor (it has MulBackward"),
            std::string::npos) << non_leaf;
  EXPECT_NE(non_leaf.find("can't optimize a non-leaf Tensor"), std::string::npos) << non_leaf;
  EXPECT_THROW(optim::SGD({{.params = {{"w", w}}, .options = {.lr = -1.0}}}, {.lr = 0.1}), Error);
  EXPECT_THROW(optim::SGD({{.params = {{"w", w}}, .options = {.nesterov = true}}}, {.lr = 0.1}), Error)
      << "nesterov without momentum";
  EXPECT_THROW(optim::Adam({{.params = {{"w", w}}, .options = {.beta2 = 1.0}}}), Error);
  EXPECT_THROW(optim::Adam(std::vector<optim::ParamGroup>{{}}), Error) << "no parameter at all";
  // Every group but one may set lr itself when SGD's is missing (PyTorch: required per group).
  EXPECT_NO_THROW(optim::SGD({{.params = {{"w", w}}, .options = {.lr = 0.1}}, {.params = {{"b", b}}, .options = {.lr = 0.2}}},
                             optim::SGDOptions{}));
  optim::SGD opt({{"w", w}}, {.lr = 0.1});
  EXPECT_THROW(opt.set_group_options(0, {.momentum = -1.0}), Error);
  EXPECT_EQ(opt.param_group_options(0).momentum, 0.0) << "a refused change leaves the group";
  EXPECT_THROW(opt.add_param_group({.params = {{"again", w}}}), Error);
  EXPECT_EQ(opt.num_param_groups(), 1u);
}

// A group added mid-run starts from the optimizer's options and its parameters' own step
// counts start at 0, so Adam's bias correction is that of a first step (PyTorch keeps the
// count per parameter); a parameter without a gradient does not count the step.
TEST(ParamGroups, AddedGroupsCountTheirOwnSteps) {
  Tensor w = scalar(1.0), late = scalar(1.0), alone = scalar(1.0);
  optim::Adam opt({{"w", w}}, {.lr = 0.1});
  for (int i = 0; i < 3; ++i) {
    w.set_grad(tensor(std::vector<double>{0.5}, kDouble));
    opt.step();
  }
  opt.add_param_group({.params = {{"late", late}}, .options = {.beta2 = 0.9}});
  EXPECT_EQ(opt.param_group_options(1).lr, 0.1);
  w.set_grad(Tensor());
  late.set_grad(tensor(std::vector<double>{0.5}, kDouble));
  opt.step();
  optim::Adam fresh({{"alone", alone}}, {.lr = 0.1, .beta2 = 0.9});
  alone.set_grad(tensor(std::vector<double>{0.5}, kDouble));
  fresh.step();
  EXPECT_EQ(late.item<double>(), alone.item<double>());
  EXPECT_EQ(opt.step_count(), 4);
  EXPECT_EQ(opt.param_step(0), 3) << "w had no gradient in the fourth step";
  EXPECT_EQ(opt.param_step(1), 1);
  EXPECT_EQ(opt.param_steps_differing(), (std::map<std::string, int64_t>{{"w", 3}, {"late", 1}}));
  // What a checkpoint gives back: the state and the differing counts.
  optim::Adam copy({{"w", scalar(0.0)}}, {.lr = 0.1});
  copy.add_param_group({.params = {{"late", scalar(0.0)}}, .options = {.beta2 = 0.9}});
  copy.load_state(opt.state(), opt.step_count(), "test", opt.param_steps_differing());
  EXPECT_EQ(copy.param_step(0), 3);
  EXPECT_EQ(copy.param_step(1), 1);
  EXPECT_THROW(copy.load_state(opt.state(), 4, "test", {{"late", 0}}), Error) << "state for a count of 0";
  EXPECT_THROW(copy.load_state(opt.state(), 4, "test", {{"nope", 1}}), Error);
  EXPECT_EQ(copy.param_step(1), 1) << "a failed load changed the counts";
}

// A PyTorch state dict of an optimizer whose second parameter never stepped: it has no state
// entry there and none here, with a step count of 0.
TEST(OptimizerStateDict, AParameterThatNeverSteppedHasNoEntry) {
  Tensor a = scalar(1.0), b = scalar(1.0);
  optim::Adam opt({{"a", a}, {"b", b}}, {.lr = 0.1});
  a.set_grad(tensor(std::vector<double>{1.0}, kDouble));
  opt.step();
  optim::OptimizerStateDict d = opt.state_dict();
  ASSERT_EQ(d.state.size(), 1u);
  EXPECT_EQ(d.state.at(0).at("step").item<float>(), 1.0f);
  optim::Adam fresh({{"a", scalar(0.0)}, {"b", scalar(0.0)}});
  fresh.load_state_dict(d);
  EXPECT_EQ(fresh.param_step(0), 1);
  EXPECT_EQ(fresh.param_step(1), 0);
  EXPECT_EQ(fresh.lr(), 0.1) << "the dict's options";
  EXPECT_EQ(fresh.state().count("b"), 0u);
}

TEST(MakeOptimizer, NamesAreTheCheckpointNames) {
  EXPECT_EQ(optim::optimizer_names(), (std::vector<std::string>{"sgd", "adam", "adamw"}));
  for (const std::string& name : optim::optimizer_names()) {
    auto opt = optim::make_optimizer(name, {{"p", scalar(1.0)}}, {.lr = 0.1});
    EXPECT_EQ(opt->name(), name);
    EXPECT_EQ(opt->lr(), 0.1);
  }
  const std::string unknown = error_of([] { optim::make_optimizer("lion", {{"p", scalar(1.0)}}, {.lr = 0.1}); });
  EXPECT_NE(unknown.find("sgd, adam, adamw"), std::string::npos) << unknown;
  // The options are the optimizer's own: a group added later starts from them.
  auto sgd = optim::make_optimizer("sgd", {{"p", scalar(1.0)}}, {.lr = 0.1, .momentum = 0.9, .nesterov = true});
  sgd->add_param_group({.params = {{"q", scalar(1.0)}}});
  EXPECT_EQ(sgd->param_group_options(1).momentum, 0.9);
  EXPECT_EQ(sgd->param_group_options(1).nesterov, true);
  EXPECT_EQ(sgd->state_keys(), (std::vector<std::string>{"momentum_buffer"}));
}

// The state each parameter keeps follows its group: momentum in one SGD group only, amsgrad's
// extra moment in one Adam group only.
TEST(ParamGroups, StateKeysFollowTheGroup) {
  Tensor a = scalar(1.0), b = scalar(1.0);
  optim::SGD sgd({{.params = {{"a", a}}, .options = {.momentum = 0.9}}, {.params = {{"b", b}}}}, {.lr = 0.1});
  a.set_grad(tensor(std::vector<double>{1.0}, kDouble));
  b.set_grad(tensor(std::vector<double>{1.0}, kDouble));
  sgd.step();
  EXPECT_EQ(sgd.state().at("a").size(), 1u);
  EXPECT_TRUE(sgd.state()["b"].empty());
  EXPECT_EQ(sgd.state_keys(1), std::vector<std::string>{});
  Tensor c = scalar(1.0), d = scalar(1.0);
  optim::Adam adam({{.params = {{"c", c}}, .options = {.amsgrad = true}}, {.params = {{"d", d}}}});
  c.set_grad(tensor(std::vector<double>{1.0}, kDouble));
  d.set_grad(tensor(std::vector<double>{1.0}, kDouble));
  adam.step();
  EXPECT_EQ(adam.state().at("c").size(), 3u);
  EXPECT_EQ(adam.state().at("d").size(), 2u);
  EXPECT_EQ(adam.state_keys(), (std::vector<std::string>{"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}));
}

// README's example, as written there.
TEST(ParamGroups, ReadmeExampleLeavesBiasesAndNormWeightsUndecayed) {
  auto model = models::small_cnn();
  optim::NamedParameters decay, no_decay;   // biases and norm weights without weight decay
  for (auto& [name, p] : model->named_parameters()) (p.dim() < 2 ? no_decay : decay).emplace_back(name, p);
  optim::AdamW opt({{.params = decay}, {.params = no_decay, .options = {.weight_decay = 0.0}}}, {.lr = 3e-4});
  optim::OneCycleLR sched(opt, {.max_lr = {3e-3}, .total_steps = 1000});   // sched.step() after opt.step()
  auto same = optim::make_optimizer("adamw", model->named_parameters(), {.lr = 3e-4});  // by name
  ASSERT_FALSE(decay.empty());
  ASSERT_FALSE(no_decay.empty());
  EXPECT_EQ(opt.param_group_options(0).weight_decay, 0.01);
  EXPECT_EQ(opt.param_group_options(1).weight_decay, 0.0);
  EXPECT_NEAR(opt.lr(1), 3e-3 / 25, 1e-15) << "OneCycleLR starts at max_lr / div_factor";
  EXPECT_EQ(opt.param_group_options(0).beta1, 0.95) << "and beta1 at max_momentum";
  EXPECT_EQ(same->name(), "adamw");
}

}  // namespace
}  // namespace strider
