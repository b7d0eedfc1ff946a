#include "bench_loader.h"

#include <omp.h>

#include <chrono>
#include <iostream>

#include <nlohmann/json.hpp>
#include <strider/strider.h>

#include "train_task.h"

namespace strider::tools {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

TrainOptions task_options(const BenchLoaderOptions& b) {
  STRIDER_CHECK(b.image_folder.empty() != b.tokens.empty(), "bench loader",
                "pass exactly one of --image-folder DIR and --tokens FILE");
  TrainOptions o;
  o.model = !b.model.empty() ? b.model : b.tokens.empty() ? "resnet50" : "gpt";
  o.image_folder = b.image_folder;
  // Not given: 224, a ResNet's ImageNet side; small_cnn's only side (validate() refuses another).
  o.image_size = b.image_folder.empty() ? 0 : b.image_size > 0 ? b.image_size : o.model == "small_cnn" ? 0 : 224;
  o.tokens = b.tokens;
  o.vocab_size = b.vocab_size;
  o.seq = b.seq;
  o.n_layer = b.n_layer;
  o.n_head = b.n_head;
  o.n_embd = b.n_embd;
  o.data_workers = b.workers;
  validate(o);
  return o;
}

// The next batch, starting the next epoch when one ends (a small folder is read several times).
io::Batch next_batch(TrainTask& task, int64_t& epoch) {
  std::optional<io::Batch> b = task.next();
  while (!b) {
    task.start_epoch(++epoch, 0);
    b = task.next();
  }
  return *b;
}

// Samples per second the loader delivers alone (after one warm-up batch).
double loader_rate(TrainTask& task, int64_t batches, int64_t& epoch) {
  next_batch(task, epoch);
  int64_t samples = 0;
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < batches; ++i) samples += next_batch(task, epoch).target.numel();
  return static_cast<double>(samples) / seconds_since(t0);
}

struct StepTimes {
  double step_seconds = 0;  // a training step on a batch already in memory
  double wait_share = 0;    // share of a step with the loader spent in next()
  double loaded_step_seconds = 0;  // a step with the loader's workers running beside it
};

StepTimes time_steps(TrainTask& task, nn::Module& model, int64_t steps, int64_t& epoch) {
  optim::SGD opt(model.named_parameters(), {.lr = 1e-4, .momentum = 0.9});
  auto step = [&](const io::Batch& b) {
    Tensor loss = task.loss(run_model(model, b.input, kFloat), b);
    opt.zero_grad();
    loss.backward();
    opt.step();
  };
  const io::Batch held = next_batch(task, epoch);
  step(held);  // warm-up
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < steps; ++i) step(held);
  StepTimes t{seconds_since(t0) / static_cast<double>(steps), 0};
  // A new pass: its first batch waits for the workers to start (once an epoch), then the steps
  // measured run while the workers read ahead.
  task.start_epoch(++epoch, 0);
  step(next_batch(task, epoch));
  double waited = 0;
  const auto t1 = Clock::now();
  for (int64_t i = 0; i < steps; ++i) {
    const auto w0 = Clock::now();
    const io::Batch b = next_batch(task, epoch);
    waited += seconds_since(w0);
    step(b);
  }
  t.loaded_step_seconds = seconds_since(t1) / static_cast<double>(steps);
  t.wait_share = waited / seconds_since(t1);
  return t;
}

}  // namespace

int run_bench_loader(const BenchLoaderOptions& b) {
  if (b.threads > 0) omp_set_num_threads(b.threads);
  manual_seed(0);
  const TrainOptions o = task_options(b);
  std::unique_ptr<TrainTask> task = make_task(o);
  task->open_data(0, 1, b.batch, kFloat);
  int64_t epoch = 0;
  task->start_epoch(epoch, 0);
  const double rate = loader_rate(*task, 4 * b.steps, epoch);
  std::shared_ptr<nn::Module> model = task->make_model();
  if (o.model != "gpt") model->to(memory_format_from_string(o.memory_format));
  const StepTimes t = time_steps(*task, *model, b.steps, epoch);
  const int64_t per_batch = o.model == "gpt" ? b.batch * b.seq : b.batch;
  const double consumed = static_cast<double>(per_batch) / t.step_seconds;
  const std::string unit = task->sample_unit();
  nlohmann::json r = {{"data", task->describe()}, {"model", task->model_signature()}, {"batch", b.batch},
                      {"workers", b.workers}, {"threads", omp_get_max_threads()}, {"steps", b.steps},
                      {"loader_" + unit + "_per_s", rate}, {"step_s", t.step_seconds},
                      {"step_" + unit + "_per_s", consumed}, {"step_with_loader_s", t.loaded_step_seconds},
                      {"wait_share", t.wait_share}};
  if (b.json) {
    std::cout << r.dump() << "\n";
    return 0;
  }
  std::cout << task->describe() << "\n  loader alone, " << b.workers << " workers: " << rate << " " << unit
            << "/s\n  " << task->model_signature() << " step (batch " << b.batch << ", " << omp_get_max_threads()
            << " threads): " << t.step_seconds << " s, " << consumed << " " << unit << "/s; "
            << t.loaded_step_seconds << " s with the loader beside it\n  waiting for data: "
            << 100 * t.wait_share << "% of a step (mean of " << b.steps << " steps)\n";
  return 0;
}

}  // namespace strider::tools
