// Any manifest given to a checkpoint load either loads into the model and optimizer, or throws
// strider::Error and leaves both exactly as they were (all-or-nothing). The input is the
// manifest's text with its checksum recomputed, so the fuzzer explores the structure behind the
// checksum (shapes, shard ranges, offsets, blocks) against real rank files of a real checkpoint.
// STRIDER_FUZZ_WRITE_SEEDS=DIR writes the valid manifests there and exits (how
// fuzz/corpus/checkpoint was made).
#include <strider/strider.h>
#include <strider/io/crc32c.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

using namespace strider;

struct Trainee {
  std::shared_ptr<nn::Sequential> model = std::make_shared<nn::Sequential>();
  std::unique_ptr<optim::Optimizer> opt;
  explicit Trainee(bool adam) {
    manual_seed(1);
    model->push_back(std::make_shared<nn::Linear>(3, 2));
    model->push_back(std::make_shared<nn::LayerNorm>(DimVector{2}));
    if (adam) opt = std::make_unique<optim::AdamW>(model->named_parameters(), optim::AdamWOptions{.lr = 0.1});
    else opt = std::make_unique<optim::SGD>(model->named_parameters(), optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
  }
  void step() {
    Tensor loss = sum((*model)(ones({4, 3})));
    opt->zero_grad();
    loss.backward();
    opt->step();
  }
  checkpoint::TrainingState state() { return {.model = model.get(), .optimizer = opt.get(), .rng = false}; }
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

std::string dirs[2];  // a committed checkpoint per optimizer (sgd, adamw)

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The input with its "~checksum" digits replaced by the right ones (if it has the field).
std::string with_checksum(std::string text) {
  const std::string field = "\"~checksum\": \"";
  const size_t at = text.rfind(field);
  if (at == std::string::npos || at + field.size() + 8 > text.size()) return text;
  const size_t digits = at + field.size();
  text.replace(digits, 8, "00000000");
  const size_t body = !text.empty() && text.back() == '\n' ? text.size() - 1 : text.size();
  text.replace(digits, 8, io::crc32c_hex(io::crc32c(0, text.data(), body)));
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string root = (std::filesystem::temp_directory_path() /
                            ("strider_fuzz_checkpoint_" + std::to_string(::getpid()))).string();
  for (bool adam : {false, true}) {
    Trainee t(adam);
    t.step();
    t.step();
    dirs[adam] = checkpoint::Checkpointer(root + "/" + t.opt->name(), nullptr).save(2, t.state());
  }
  if (const char* seeds = std::getenv("STRIDER_FUZZ_WRITE_SEEDS")) {
    std::filesystem::create_directories(seeds);
    for (bool adam : {false, true})
      std::ofstream(std::string(seeds) + (adam ? "/adamw.json" : "/sgd.json")) << read(dirs[adam] + "/manifest.json");
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = with_checksum(std::string(reinterpret_cast<const char*>(data), size));
  for (bool adam : {false, true}) {
    { std::ofstream(dirs[adam] + "/manifest.json", std::ios::trunc | std::ios::binary) << text; }
    Trainee t(adam);
    t.step();
    const std::vector<double> before = t.snapshot();
    try {
      checkpoint::load(dirs[adam], t.state(), nullptr);
      t.step();  // what was loaded trains
    } catch (const Error&) {
      if (t.snapshot() != before) std::abort();  // a failed load changed the model or optimizer
    }
  }
  return 0;
}
