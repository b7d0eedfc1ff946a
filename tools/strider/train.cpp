#include "train.h"

#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>
#include <strider/strider.h>

#include "svg_plot.h"
#include "train_task.h"

namespace strider::tools {
namespace {

using Clock = std::chrono::steady_clock;
namespace F = nn::functional;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void print_progress(int64_t epoch, int64_t epochs, int64_t step, int64_t steps, double loss, double rate,
                    const char* unit, double eta, bool tty) {
  const int width = 24;
  const int filled = steps ? static_cast<int>(width * step / steps) : width;
  std::fprintf(stderr, "%sepoch %lld/%lld [%s%s] %lld/%lld loss %.4f  %.0f %s/s  ETA %02d:%02d%s",
               tty ? "\r" : "", static_cast<long long>(epoch), static_cast<long long>(epochs),
               std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
               static_cast<long long>(step), static_cast<long long>(steps), loss, rate, unit,
               static_cast<int>(eta) / 60, static_cast<int>(eta) % 60, tty ? "   " : "\n");
  std::fflush(stderr);
}

// How a checkpoint's tensors are laid out: whole ("local") or one rank's part of a parallel run.
std::string parallel_layout(const TrainOptions& o, int rank, int world) {
  if (world == 1) return "local";
  return o.fsdp + ", rank " + std::to_string(rank) + " of " + std::to_string(world);
}

void save_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer& opt, const TrainOptions& o,
                     const std::string& signature, const std::string& layout, int64_t epoch) {
  io::TensorMap t;
  for (auto& [n, v] : model.state_dict()) t["model." + n] = v;
  for (auto& [pname, st] : opt.state())
    for (auto& [k, v] : st) t["optim." + pname + "." + k] = v;
  io::save_safetensors(path, t, {{"model", signature}, {"layout", layout}, {"epoch", std::to_string(epoch)},
                                 {"optimizer", o.optimizer}, {"optimizer_steps", std::to_string(opt.step_count())}});
}

int64_t load_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer& opt,
                        const std::string& signature, const std::string& layout) {
  io::SafetensorsFile f = io::load_safetensors(path);
  STRIDER_CHECK(f.metadata["model"] == signature, "train", "checkpoint ", path, " holds a '", f.metadata["model"],
                "' model, not '", signature, "'");
  const std::string saved = f.metadata.count("layout") ? f.metadata["layout"] : "local";
  STRIDER_CHECK(saved == layout, "train", "checkpoint ", path, " holds ", saved, " but this run is ", layout,
                "; resume with the same --fsdp and number of ranks (mpirun -np) it was written with");
  std::map<std::string, Tensor> model_state;
  for (auto& [n, v] : f.tensors) {
    if (n.rfind("model.", 0) == 0) model_state[n.substr(6)] = v;
    if (n.rfind("optim.", 0) == 0) {
      const std::string rest = n.substr(6);
      const size_t dot = rest.rfind('.');
      Tensor v_layout;
      for (auto& [pn, p] : opt.params())
        if (pn == rest.substr(0, dot)) v_layout = empty_like(p);
      STRIDER_CHECK(v_layout.defined(), "train", "checkpoint has optimizer state for unknown parameter '", rest, "'");
      v_layout.copy_(v);
      opt.state()[rest.substr(0, dot)][rest.substr(dot + 1)] = v_layout;
    }
  }
  model.load_state_dict(model_state);
  opt.set_step_count(std::stoll(f.metadata["optimizer_steps"]));
  return std::stoll(f.metadata["epoch"]);
}

// The model as trained: plain, or wrapped for data parallelism over MPI.
struct Parallel {
  std::shared_ptr<dist::MpiProcessGroup> pg;
  int rank = 0, world = 1;
  std::shared_ptr<nn::Module> model;
  fsdp::FullyShardedDataParallel* fsdp = nullptr;
};

Parallel make_parallel(std::shared_ptr<nn::Module> model, const TrainOptions& o, ScalarType dtype) {
  Parallel p;
  p.model = model;
  if (o.fsdp == "none") return p;
  p.pg = dist::MpiProcessGroup::init();
  p.rank = p.pg->rank();
  p.world = p.pg->size();
  STRIDER_CHECK(o.batch_size % p.world == 0, "train", "--batch-size ", o.batch_size, " does not split evenly over ",
                p.world, " ranks");
  if (o.fsdp == "ddp") {
    p.model = fsdp::DistributedDataParallel::wrap(model, p.pg);
    return p;
  }
  fsdp::FSDPOptions f;
  if (o.fsdp == "full_shard") f.sharding_strategy = fsdp::ShardingStrategy::FullShard;
  else if (o.fsdp == "shard_grad_op") f.sharding_strategy = fsdp::ShardingStrategy::ShardGradOp;
  else if (o.fsdp == "no_shard") f.sharding_strategy = fsdp::ShardingStrategy::NoShard;
  else STRIDER_CHECK(false, "train", "unknown --fsdp '", o.fsdp, "'; use none, ddp, full_shard, shard_grad_op or no_shard");
  f.auto_wrap_policy = fsdp::size_based_auto_wrap_policy(o.fsdp_min_params);
  f.cpu_offload.offload_params = o.fsdp_offload;
  f.sync_module_states = true;
  if (dtype == kBFloat16)
    f.mixed_precision = fsdp::MixedPrecision{.param_dtype = kBFloat16, .reduce_dtype = kFloat, .buffer_dtype = {}};
  auto wrapped = fsdp::FullyShardedDataParallel::wrap(model, p.pg, f);
  p.fsdp = wrapped.get();
  p.model = wrapped;
  return p;
}

int train_loop(const TrainOptions& o);

}  // namespace

Tensor run_model(nn::Module& model, const Tensor& input, ScalarType cast_dtype) {
  if (cast_dtype != kBFloat16) return model(input);
  nn::CastParameters cast(model, kBFloat16);
  return model(input);
}

int run_train(const TrainOptions& o) {
  if (o.fsdp == "none") return train_loop(o);
  // Under MPI a failing rank ends the whole job with its message instead of hanging the others.
  auto pg = dist::MpiProcessGroup::init();
  return dist::run_or_abort(pg, [&] { return train_loop(o); });
}

namespace {

int train_loop(const TrainOptions& o) {
  if (o.threads > 0) omp_set_num_threads(o.threads);
  manual_seed(o.seed);
  const MemoryFormat fmt = memory_format_from_string(o.memory_format);
  const ScalarType dtype = scalar_type_from_string(o.dtype);
  STRIDER_CHECK(dtype == kFloat || dtype == kBFloat16, "train", "--dtype must be float32 or bfloat16");
  STRIDER_CHECK(o.epochs > 0 && o.batch_size > 0 && o.lr > 0, "train", "epochs, batch size and lr must be positive");
  std::filesystem::create_directories(o.out_dir);

  std::unique_ptr<TrainTask> task = o.model == "gpt" ? make_text_task(o) : make_image_task(o);
  auto base_model = task->make_model();
  base_model->to(fmt);
  Parallel par = make_parallel(base_model, o, dtype);
  auto& model = par.model;
  const bool lead = par.rank == 0;  // only rank 0 prints and writes shared files
  const std::string ckpt = o.out_dir + (par.world > 1 ? "/checkpoint-rank" + std::to_string(par.rank) : "/checkpoint") +
                           ".safetensors";
  task->open_data(par.rank, par.world, o.batch_size / par.world, par.fsdp ? kFloat : dtype);
  std::unique_ptr<optim::Optimizer> opt;
  if (o.optimizer == "sgd") {
    opt = std::make_unique<optim::SGD>(model->named_parameters(),
                                       optim::SGDOptions{.lr = o.lr, .momentum = 0.9, .weight_decay = o.weight_decay, .nesterov = true});
  } else {
    STRIDER_CHECK(o.optimizer == "adamw", "train", "unknown optimizer '", o.optimizer, "'; use sgd or adamw");
    opt = std::make_unique<optim::AdamW>(model->named_parameters(), optim::AdamOptions{.lr = o.lr, .weight_decay = o.weight_decay});
  }
  const int64_t steps_per_epoch = o.limit_batches > 0 ? std::min(o.limit_batches, task->batches_per_epoch())
                                                      : task->batches_per_epoch();
  STRIDER_CHECK(steps_per_epoch > 0, "train", "the training data makes no full batch of ", o.batch_size,
                "; lower --batch-size");
  const int64_t total_steps = steps_per_epoch * o.epochs;
  optim::CosineWithWarmup sched(*opt, std::min<int64_t>(steps_per_epoch / 2, 200), total_steps);
  int64_t start_epoch = 0;
  const std::string layout = parallel_layout(o, par.rank, par.world);
  if (!o.resume.empty()) {
    // Under mpirun --resume names the run's directory (or any of its rank files); each rank
    // reads its own part.
    std::string from = o.resume;
    if (par.world > 1) {
      const std::filesystem::path p(o.resume);
      const auto dir = std::filesystem::is_directory(p) ? p : p.parent_path();
      from = (dir / ("checkpoint-rank" + std::to_string(par.rank) + ".safetensors")).string();
    }
    start_epoch = load_checkpoint(from, *model, *opt, task->model_signature(), layout);
    for (int64_t i = 0; i < start_epoch * steps_per_epoch; ++i) sched.step();
  }

  const bool tty = lead && o.progress && ::isatty(STDERR_FILENO);
  const ScalarType cast_dtype = par.fsdp ? kFloat : dtype;  // FSDP casts through MixedPrecision
  std::ofstream metrics(o.out_dir + "/metrics.jsonl", o.resume.empty() ? std::ios::trunc : std::ios::app);
  EvalResult score;
  Series loss_curve{"training loss", "step", "loss", {}}, eval_curve{"held-out score", "epoch", "", {}};
  const auto t0 = Clock::now();
  double last_loss = 0;
  int64_t global_step = start_epoch * steps_per_epoch;
  if (!o.json && lead)
    std::cerr << "training " << task->model_signature() << " (" << model->num_parameters() << " parameters) on "
              << task->describe() << ", " << o.memory_format << ", " << o.dtype << ", " << omp_get_max_threads()
              << " threads, " << o.epochs << " epochs of " << steps_per_epoch << " steps"
              << (par.world > 1 ? ", " + o.fsdp + " on " + std::to_string(par.world) + " ranks" : std::string()) << "\n";
  for (int64_t epoch = start_epoch; epoch < o.epochs; ++epoch) {
    task->start_epoch(epoch);
    const auto te = Clock::now();
    double loss_sum = 0;
    int64_t step = 0, samples = 0;
    while (auto b = task->next()) {
      if (step >= steps_per_epoch) break;
      Tensor loss;
      {
        std::optional<nn::CastParameters> cast;
        if (cast_dtype == kBFloat16) cast.emplace(*model, kBFloat16);
        loss = task->loss((*model)(b->input), *b);
        opt->zero_grad();
        loss.backward();
      }
      opt->step();
      sched.step();
      last_loss = loss.item<double>();
      if (par.pg) {  // report the global batch's loss
        Tensor l = full({1}, last_loss, kDouble);
        par.pg->all_reduce(l, dist::ReduceOp::Avg);
        last_loss = l.item<double>();
      }
      STRIDER_CHECK(std::isfinite(last_loss), "train", "the loss became ", last_loss, " at epoch ", epoch + 1,
                    " step ", step + 1, "; lower the learning rate (--lr)");
      loss_sum += last_loss;
      samples += b->target.numel();
      ++step;
      ++global_step;
      loss_curve.points.emplace_back(static_cast<double>(global_step), last_loss);
      const double el = seconds_since(te);
      const bool report = tty ? (step % 5 == 0 || step == steps_per_epoch) : (step % std::max<int64_t>(1, steps_per_epoch / 4) == 0);
      if (lead && o.progress && !o.json && report) {
        const double rate = static_cast<double>(samples * par.world) / std::max(el, 1e-9);
        const double eta = (total_steps - global_step) * (el / step);
        print_progress(epoch + 1, o.epochs, step, steps_per_epoch, loss_sum / step, rate, task->sample_unit(), eta, tty);
      }
    }
    if (tty && !o.json) std::fputc('\n', stderr);
    samples *= par.world;
    const double epoch_s = seconds_since(te);
    score = task->evaluate(*model, cast_dtype);
    eval_curve.y_label = score.metric;
    eval_curve.points.emplace_back(static_cast<double>(epoch + 1), score.value);
    nlohmann::json rec = {{"epoch", epoch + 1}, {"train_loss", loss_sum / std::max<int64_t>(step, 1)},
                          {score.metric, score.value}, {"epoch_seconds", epoch_s},
                          {std::string(task->sample_unit()) + "_per_s", samples / std::max(epoch_s, 1e-9)},
                          {"lr", opt->lr()}};
    if (lead) metrics << rec.dump() << "\n" << std::flush;
    if (!o.json && lead)
      std::cerr << "epoch " << epoch + 1 << ": train loss " << loss_sum / std::max<int64_t>(step, 1) << ", "
                << score.summary << ", " << epoch_s << " s\n";
    save_checkpoint(ckpt, *model, *opt, o, task->model_signature(), layout, epoch + 1);  // per rank under FSDP: its shards
  }
  if (!o.json) task->after_training(*model, cast_dtype, lead);
  const double total_s = seconds_since(t0);
  if (!lead) return 0;
  eval_curve.title = score.metric;
  write_svg_plot(o.out_dir + "/curves.svg", {loss_curve, eval_curve});
  nlohmann::json summary = {{"model", task->model_signature()}, {"memory_format", o.memory_format},
                            {"dtype", o.dtype}, {"epochs", o.epochs}, {score.metric, score.value},
                            {"final_loss", last_loss}, {"seconds", total_s}, {"out_dir", o.out_dir},
                            {"parallel", o.fsdp}, {"ranks", par.world}};
  if (o.json) {
    std::cout << summary.dump() << "\n";
  } else {
    std::cout << "done: " << o.epochs << " epochs in " << total_s << " s, " << score.summary << "\n  metrics "
              << o.out_dir << "/metrics.jsonl, plot " << o.out_dir << "/curves.svg, checkpoint " << ckpt << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace strider::tools
