#pragma once
// `strider bench model`: times training steps (forward + backward + SGD) or inference of a model
// on random data and prints the median step time and images/s.
#include <cstdint>
#include <string>

namespace strider::tools {

struct BenchOptions {
  std::string model = "resnet50";
  std::string mode = "train";  // train | infer
  int64_t batch = 16;
  int64_t image_size = 224;
  std::string memory_format = "channels_last";
  std::string dtype = "float32";
  int threads = 0;
  int64_t warmup = 2;
  int64_t steps = 5;
  bool json = false;
};

int run_bench_model(const BenchOptions& options);

}  // namespace strider::tools
