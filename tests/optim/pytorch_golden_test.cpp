// Optimizers against PyTorch 1.13 (tests/golden/generate_optim.py): trajectories of SGD, Adam
// and AdamW over two param groups with different options (parameters without a gradient in a
// step, a group added mid-run), the state dict in PyTorch's layout, and loading PyTorch's state
// dict into a fresh optimizer.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "optim/pytorch_json.h"
#include "support/compare.h"

namespace strider {
namespace {

using nlohmann::json;
using testing::all_close;
using testing::optim_golden;
using testing::options_from_pytorch;
using testing::tensor_from_json;

constexpr double kTol = 1e-12;

struct Trained {
  std::map<std::string, Tensor> live;
  std::unique_ptr<optim::Optimizer> opt;
};

optim::ParamGroup group_of(const json& names, const json& options, std::map<std::string, Tensor>& live) {
  optim::ParamGroup g;
  for (const auto& n : names) g.params.emplace_back(n.get<std::string>(), live.at(n.get<std::string>()));
  g.options = options_from_pytorch(options);
  return g;
}

// The case's optimizer on `params` (leaves), through make_optimizer.
Trained build(const json& c, const std::map<std::string, Tensor>& params) {
  Trained r;
  for (auto& [n, t] : params) r.live[n] = t.clone().requires_grad_();
  std::vector<optim::ParamGroup> groups;
  for (const auto& g : c.at("groups")) groups.push_back(group_of(g.at("names"), g.at("options"), r.live));
  r.opt = optim::make_optimizer(testing::optimizer_name(c.at("optimizer")), std::move(groups),
                                options_from_pytorch(c.at("defaults")));
  return r;
}

void add_group(Trained& r, const json& c) {
  const json& a = c.at("add_group");
  r.opt->add_param_group(group_of(a.at("names"), a.at("options"), r.live));
}

void set_grads(Trained& r, const json& grads) {
  for (auto& [n, g] : grads.items()) r.live.at(n).set_grad(g.is_null() ? Tensor() : tensor_from_json(g));
}

void expect_params(const Trained& r, const json& want, const std::string& where) {
  for (auto& [n, v] : want.items()) EXPECT_TRUE(all_close(r.live.at(n), tensor_from_json(v), kTol, kTol)) << where << " " << n;
}

void expect_same_options(const optim::GroupOptions& got, const optim::GroupOptions& want, const std::string& where) {
  EXPECT_EQ(got.lr, want.lr) << where;
  EXPECT_EQ(got.momentum, want.momentum) << where;
  EXPECT_EQ(got.dampening, want.dampening) << where;
  EXPECT_EQ(got.weight_decay, want.weight_decay) << where;
  EXPECT_EQ(got.beta1, want.beta1) << where;
  EXPECT_EQ(got.beta2, want.beta2) << where;
  EXPECT_EQ(got.eps, want.eps) << where;
  EXPECT_EQ(got.nesterov, want.nesterov) << where;
  EXPECT_EQ(got.maximize, want.maximize) << where;
  EXPECT_EQ(got.amsgrad, want.amsgrad) << where;
}

std::map<std::string, Tensor> initial_params(const json& c) {
  std::map<std::string, Tensor> p;
  for (auto& [n, v] : c.at("initial").items()) p[n] = tensor_from_json(v);
  return p;
}

TEST(OptimizerGolden, TrajectoriesMatchPyTorch) {
  for (auto& [name, c] : optim_golden().at("trajectories").items()) {
    SCOPED_TRACE(name);
    Trained r = build(c, initial_params(c));
    for (size_t s = 0; s < c.at("grads").size(); ++s) {
      if (!c.at("add_group").is_null() && c.at("add_group").at("after_step").get<size_t>() == s) add_group(r, c);
      set_grads(r, c.at("grads")[s]);
      r.opt->step();
      expect_params(r, c.at("after")[s], "after step " + std::to_string(s));
    }
  }
}

// Our state_dict() after the same steps is PyTorch's, key for key.
TEST(OptimizerGolden, StateDictHasPyTorchsLayout) {
  for (auto& [name, c] : optim_golden().at("trajectories").items()) {
    SCOPED_TRACE(name);
    Trained r = build(c, initial_params(c));
    for (size_t s = 0; s < c.at("grads").size(); ++s) {
      if (!c.at("add_group").is_null() && c.at("add_group").at("after_step").get<size_t>() == s) add_group(r, c);
      set_grads(r, c.at("grads")[s]);
      r.opt->step();
    }
    const optim::OptimizerStateDict got = r.opt->state_dict();
    const optim::OptimizerStateDict want = testing::state_dict_from_pytorch(c.at("state_dict"));
    ASSERT_EQ(got.state.size(), want.state.size());
    for (auto& [index, entries] : want.state) {
      ASSERT_TRUE(got.state.count(index)) << "parameter " << index;
      const auto& ours = got.state.at(index);
      ASSERT_EQ(ours.size(), entries.size()) << "parameter " << index;
      for (auto& [key, t] : entries) {
        ASSERT_TRUE(ours.count(key)) << "parameter " << index << " " << key;
        EXPECT_EQ(ours.at(key).dtype(), key == "step" ? kFloat : kDouble) << key;
        EXPECT_TRUE(all_close(ours.at(key), t, kTol, kTol)) << "parameter " << index << " " << key;
      }
    }
    ASSERT_EQ(got.param_groups.size(), want.param_groups.size());
    for (size_t g = 0; g < want.param_groups.size(); ++g) {
      EXPECT_EQ(got.param_groups[g].params, want.param_groups[g].params) << "group " << g;
      expect_same_options(got.param_groups[g].options, want.param_groups[g].options, "group " + std::to_string(g));
    }
  }
}

// PyTorch's state dict loaded into a fresh optimizer continues as PyTorch's did: moments,
// each parameter's own step count (bias correction) and the groups' options all arrive.
TEST(OptimizerGolden, LoadsPyTorchsStateDictAndContinues) {
  for (auto& [name, c] : optim_golden().at("trajectories").items()) {
    SCOPED_TRACE(name);
    std::map<std::string, Tensor> at;
    for (auto& [n, v] : c.at("continue").at("params").items()) at[n] = tensor_from_json(v);
    json fresh_case = c;
    for (auto& g : fresh_case["groups"]) g["options"] = json::object();  // the dict brings the options
    Trained r = build(fresh_case, at);
    if (!c.at("add_group").is_null()) {
      fresh_case["add_group"]["options"] = json::object();
      add_group(r, fresh_case);
    }
    r.opt->load_state_dict(testing::state_dict_from_pytorch(c.at("state_dict")), name);
    set_grads(r, c.at("continue").at("grads"));
    r.opt->step();
    expect_params(r, c.at("continue").at("after"), "the step after loading");
  }
}

TEST(OptimizerStateDict, MismatchedGroupsAreErrorsAndChangeNothing) {
  const json& c = optim_golden().at("trajectories").at("adam_l2_amsgrad");
  Trained r = build(c, initial_params(c));
  const optim::OptimizerStateDict pytorch = testing::state_dict_from_pytorch(c.at("state_dict"));
  // The dict has three groups (one added mid-run); this optimizer two.
  EXPECT_THROW(r.opt->load_state_dict(pytorch), Error);
  add_group(r, c);
  optim::OptimizerStateDict bad = pytorch;
  bad.state.at(1)["exp_avg"] = zeros({7}, kDouble);  // the wrong shape
  const double lr_before = r.opt->lr(1);
  try {
    r.opt->load_state_dict(bad, "bad.json");
    ADD_FAILURE() << "a wrong shape loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
  }
  EXPECT_EQ(r.opt->lr(1), lr_before) << "a failed load changed the groups' options";
  EXPECT_TRUE(r.opt->state().empty());
  bad = pytorch;
  bad.param_groups[0].options.beta1.reset();
  bad.param_groups[0].options.momentum = 0.9;  // not an Adam option
  EXPECT_THROW(r.opt->load_state_dict(bad), Error);
  EXPECT_NO_THROW(r.opt->load_state_dict(pytorch));
  EXPECT_EQ(r.opt->param_step(1), 5) << "'b' missed one of six steps";
  EXPECT_EQ(r.opt->param_step(2), 3) << "'c' joined after three";
  EXPECT_EQ(r.opt->step_count(), 6);
}

}  // namespace
}  // namespace strider
