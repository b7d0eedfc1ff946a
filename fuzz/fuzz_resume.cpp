// Any byte string given to the trainer's resume either loads into the model and optimizer, or
// throws strider::Error and leaves both exactly as they were (all-or-nothing).
// STRIDER_FUZZ_WRITE_SEEDS=DIR writes valid checkpoints of the fuzzed model there and exits
// (how fuzz/corpus/resume was made).
#include <strider/strider.h>

#include <cstdlib>
#include <filesystem>

#include "checkpoint.h"
#include "fuzz_file.h"

namespace {

using namespace strider;

struct Trainee {
  std::shared_ptr<nn::Sequential> model = std::make_shared<nn::Sequential>();
  std::unique_ptr<optim::Optimizer> opt;
  explicit Trainee(bool adam) {
    manual_seed(1);
    model->push_back(std::make_shared<nn::Linear>(3, 2));
    model->push_back(std::make_shared<nn::LayerNorm>(DimVector{2}));
    if (adam) opt = std::make_unique<optim::AdamW>(model->named_parameters(), optim::AdamOptions{.lr = 0.1});
    else opt = std::make_unique<optim::SGD>(model->named_parameters(), optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
  }
  void step() {
    Tensor loss = sum((*model)(ones({4, 3})));
    opt->zero_grad();
    loss.backward();
    opt->step();
  }
  tools::CheckpointInfo info() const {
    return {.model = "fuzz", .layout = "local", .optimizer = opt->name(), .epoch = 1, .optimizer_steps = opt->step_count()};
  }
  // Everything a load may change, flattened in name order.
  std::vector<double> snapshot() {
    std::vector<double> v;
    for (auto& [n, t] : model->state_dict())
      for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.reshape({-1})[i].item<double>());
    for (auto& [n, st] : opt->state())
      for (auto& [k, t] : st)
        for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.reshape({-1})[i].item<double>());
    v.push_back(static_cast<double>(opt->step_count()));
    return v;
  }
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("STRIDER_FUZZ_WRITE_SEEDS")) {
    std::filesystem::create_directories(dir);
    for (bool adam : {false, true}) {
      Trainee t(adam);
      t.step();
      t.step();
      tools::save_checkpoint(std::string(dir) + "/" + t.opt->name() + ".safetensors", *t.model, *t.opt, t.info());
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strider::fuzz::MemoryFile file(data, size);
  for (bool adam : {false, true}) {
    Trainee t(adam);
    t.step();
    const std::vector<double> before = t.snapshot();
    try {
      tools::load_checkpoint(file.path(), *t.model, *t.opt, t.info(), /*reset_optimizer=*/false);
      t.step();  // what was loaded trains
    } catch (const Error&) {
      if (t.snapshot() != before) std::abort();  // a failed load changed the model or optimizer
    }
  }
  return 0;
}
