#pragma once
// A small training run (CNN with batch norm, AdamW, a schedule) and the helpers the checkpoint
// tests share: a fresh temporary directory, an error's text, and bitwise state comparison.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <filesystem>
#include <functional>

#include "support/compare.h"

namespace strider::testing {

struct TrainRun {
  std::shared_ptr<nn::Module> model;
  std::unique_ptr<optim::Optimizer> opt;
  std::unique_ptr<optim::CosineWithWarmup> sched;
};

// A CNN with batch norm (buffers, a 0-d int64 one included), AdamW and a schedule, after
// `steps` steps on fixed data.
inline TrainRun make_run(uint64_t seed, int steps) {
  manual_seed(seed);
  TrainRun r;
  r.model = models::small_cnn(10, 1);
  r.opt = std::make_unique<optim::AdamW>(r.model->named_parameters(), optim::AdamWOptions{.lr = 1e-2});
  r.sched = std::make_unique<optim::CosineWithWarmup>(*r.opt, 2, 10);
  manual_seed(100);
  const Tensor x = randn({4, 1, 28, 28}), y = tensor(std::vector<int64_t>{1, 2, 3, 4});
  for (int i = 0; i < steps; ++i) {
    Tensor loss = nn::functional::cross_entropy((*r.model)(x), y);
    r.opt->zero_grad();
    loss.backward();
    r.opt->step();
    r.sched->step();
  }
  return r;
}

inline checkpoint::TrainingState state_of(TrainRun& r, checkpoint::DataPosition* pos = nullptr,
                                   std::map<std::string, std::string>* user = nullptr) {
  return {.model = r.model.get(), .optimizer = r.opt.get(), .scheduler = r.sched.get(), .data = pos, .user = user};
}

inline std::string temp_dir(const std::string& name) {
  const std::filesystem::path p = std::filesystem::temp_directory_path() / ("strider_ckpt_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  return p.string();
}

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

inline void expect_same_state(TrainRun& a, TrainRun& b) {
  const auto sa = a.model->state_dict(), sb = b.model->state_dict();
  ASSERT_EQ(sa.size(), sb.size());
  for (auto& [name, t] : sa) EXPECT_TRUE(testing::all_close(sb.at(name), t, 0, 0)) << name;
  ASSERT_EQ(a.opt->state().size(), b.opt->state().size());
  for (auto& [name, keys] : a.opt->state())
    for (auto& [k, t] : keys) EXPECT_TRUE(testing::all_close(b.opt->state().at(name).at(k), t, 0, 0)) << name << k;
  EXPECT_EQ(a.opt->step_count(), b.opt->step_count());
  EXPECT_EQ(a.sched->last_step(), b.sched->last_step());
  EXPECT_EQ(a.opt->lr(), b.opt->lr());
}

}  // namespace strider::testing
