// Optimizers with param groups through a checkpoint: a parameter without a gradient in some step
// and a group added mid-run keep their own step counts (Adam's bias correction), which the
// manifest records, so a resumed run continues bit for bit.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "checkpoint/train_run.h"

namespace strider {
namespace {

struct GroupedRun {
  std::shared_ptr<nn::Module> model;
  std::unique_ptr<optim::AdamW> opt;
  std::string held_back, skipped;  // added as a third group at step 2; no gradient at step 1
};

// Weights decayed, biases not; the last parameter joins at step 2.
GroupedRun make(uint64_t seed) {
  manual_seed(seed);
  GroupedRun r;
  r.model = models::small_cnn(10, 1);
  auto params = r.model->named_parameters();
  r.held_back = params.back().first;
  optim::NamedParameters decay, no_decay;
  for (auto& [name, p] : params) {
    if (name == r.held_back) continue;
    if (p.dim() < 2 && r.skipped.empty()) r.skipped = name;
    (p.dim() < 2 ? no_decay : decay).emplace_back(name, p);
  }
  r.opt = std::make_unique<optim::AdamW>(
      std::vector<optim::ParamGroup>{{.params = decay}, {.params = no_decay, .options = {.weight_decay = 0.0}}},
      optim::AdamWOptions{.lr = 1e-2});
  return r;
}

void add_held_back(GroupedRun& r) {
  for (auto& [name, p] : r.model->named_parameters())
    if (name == r.held_back) r.opt->add_param_group({.params = {{name, p}}, .options = {.lr = 5e-3}});
}

void train(GroupedRun& r, int from, int to) {
  manual_seed(100);
  const Tensor x = randn({4, 1, 28, 28}), y = tensor(std::vector<int64_t>{1, 2, 3, 4});
  for (int step = from; step < to; ++step) {
    if (step == 2) add_held_back(r);
    Tensor loss = nn::functional::cross_entropy((*r.model)(x), y);
    r.opt->zero_grad();
    loss.backward();
    if (step == 1)
      for (auto& [name, p] : r.model->named_parameters())
        if (name == r.skipped) p.set_grad(Tensor());
    r.opt->step();
  }
}

TEST(CheckpointParamGroups, PerParameterStepCountsResumeBitwise) {
  const std::string dir = testing::temp_dir("param_groups");
  GroupedRun whole = make(1);
  train(whole, 0, 5);

  GroupedRun first = make(1);
  train(first, 0, 3);
  checkpoint::Checkpointer(dir, nullptr).save(3, {.model = first.model.get(), .optimizer = first.opt.get()});
  const checkpoint::Manifest m = checkpoint::read_manifest(dir + "/checkpoint-000000003");
  EXPECT_EQ(m.optimizer_steps, 3);
  EXPECT_EQ(m.optimizer_param_steps,
            (std::map<std::string, int64_t>{{first.skipped, 2}, {first.held_back, 1}}));

  GroupedRun resumed = make(2);  // other weights; the same groups, the third added before loading
  add_held_back(resumed);
  checkpoint::load(dir, {.model = resumed.model.get(), .optimizer = resumed.opt.get()}, nullptr);
  EXPECT_EQ(resumed.opt->param_steps_differing(), first.opt->param_steps_differing());
  train(resumed, 3, 5);

  const auto want = whole.model->state_dict(), got = resumed.model->state_dict();
  for (auto& [name, t] : want) EXPECT_TRUE(testing::all_close(got.at(name), t, 0, 0)) << name;
  for (auto& [name, keys] : whole.opt->state())
    for (auto& [k, t] : keys) EXPECT_TRUE(testing::all_close(resumed.opt->state().at(name).at(k), t, 0, 0)) << name << k;
  EXPECT_EQ(resumed.opt->param_steps_differing(), whole.opt->param_steps_differing());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace strider
