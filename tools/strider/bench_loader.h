#pragma once
// `strider bench loader`: how fast the trainer's data loader delivers (images decoded and
// augmented per second, or tokens per second, with N worker threads) beside what a training
// step consumes, and the share of a training step spent waiting for data when both share the
// machine. It drives the trainer's own tasks (--image-folder, --tokens), so it measures what
// `strider train` runs.
#include <cstdint>
#include <string>

namespace strider::tools {

struct BenchLoaderOptions {
  std::string image_folder;  // exactly one of image_folder / tokens
  std::string tokens;
  std::string model;          // default: resnet50 (images) or gpt (tokens)
  int64_t batch = 16;
  int64_t image_size = 0;     // 0: 224, or 28 for --model small_cnn (the only side it takes)
  int64_t vocab_size = 0;     // 0: the file's largest id + 1
  int64_t seq = 1024, n_layer = 12, n_head = 12, n_embd = 768;  // GPT-2 small
  int64_t workers = 2;
  int threads = 0;
  int64_t steps = 5;
  bool json = false;
};

int run_bench_loader(const BenchLoaderOptions& options);

}  // namespace strider::tools
