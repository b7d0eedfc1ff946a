#include "bench.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <vector>

#include <nlohmann/json.hpp>
#include <strider/strider.h>

namespace strider::tools {

int run_bench_model(const BenchOptions& o) {
  if (o.threads > 0) omp_set_num_threads(o.threads);
  const MemoryFormat fmt = memory_format_from_string(o.memory_format);
  const ScalarType dtype = scalar_type_from_string(o.dtype);
  STRIDER_CHECK(dtype == kFloat || dtype == kBFloat16, "bench", "--dtype must be float32 or bfloat16");
  STRIDER_CHECK(o.mode == "train" || o.mode == "infer", "bench", "--mode must be train or infer");
  STRIDER_CHECK(o.steps > 0 && o.batch > 0, "bench", "--steps and --batch must be positive");
  manual_seed(0);
  std::shared_ptr<nn::Module> model;
  int64_t channels = 3, size = o.image_size;
  if (o.model == "resnet50") model = models::resnet50();
  else if (o.model == "resnet18") model = models::resnet18();
  else if (o.model == "resnet34") model = models::resnet34();
  else if (o.model == "fmnist_resnet") { model = models::fmnist_resnet(); channels = 1; size = 28; }
  else STRIDER_CHECK(false, "bench", "unknown model '", o.model, "'; use resnet18, resnet34, resnet50 or fmnist_resnet");
  model->to(fmt);
  const bool train = o.mode == "train";
  if (!train) model->eval();
  Tensor x = randn({o.batch, channels, size, size});
  if (dtype != kFloat) x = x.to(dtype);
  x = x.contiguous(fmt);
  Tensor y = zeros({o.batch}, kLong);
  optim::SGD opt(model->named_parameters(), {.lr = 0.01, .momentum = 0.9});
  auto step = [&] {
    std::optional<nn::CastParameters> cast;
    if (dtype != kFloat) cast.emplace(*model, dtype);
    if (train) {
      Tensor loss = nn::functional::cross_entropy((*model)(x).to(kFloat), y);
      opt.zero_grad();
      loss.backward();
      cast.reset();
      opt.step();
    } else {
      NoGradGuard g;
      (*model)(x);
    }
  };
  for (int64_t i = 0; i < o.warmup; ++i) step();
  std::vector<double> ms;
  for (int64_t i = 0; i < o.steps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    step();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  nlohmann::json r = {{"model", o.model}, {"mode", o.mode}, {"batch", o.batch}, {"memory_format", o.memory_format},
                      {"dtype", o.dtype}, {"isa", cpu_isa_name()}, {"threads", omp_get_max_threads()}, {"steps", o.steps},
                      {"ms_per_step", median}, {"ms_min", ms.front()}, {"ms_max", ms.back()},
                      {"images_per_s", 1000.0 * static_cast<double>(o.batch) / median}};
  if (o.json) std::cout << r.dump() << "\n";
  else std::cout << o.model << " " << o.mode << " batch " << o.batch << " " << o.memory_format << " " << o.dtype
                 << ": " << median << " ms/step (median of " << o.steps << "), " << r["images_per_s"].get<double>()
                 << " images/s (" << cpu_isa_name() << ")\n";
  return 0;
}

}  // namespace strider::tools
