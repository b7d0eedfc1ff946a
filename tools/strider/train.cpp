#include "train.h"

#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

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

// Paths from flags may hold bytes that are not UTF-8; JSON output replaces them instead of throwing.
std::string json_line(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// The model as trained: plain, or wrapped for data parallelism over MPI.
struct Parallel {
  std::shared_ptr<dist::ProcessGroup> pg;
  int rank = 0, world = 1;
  std::shared_ptr<nn::Module> model;
  fsdp::FullyShardedDataParallel* fsdp = nullptr;    // the FSDP front (not DDP's)
  fsdp::FullyShardedDataParallel* engine = nullptr;  // the engine under either front
};

// --deterministic's micro-batch count (0: one sample each).
int64_t micro_batches(const TrainOptions& o) { return o.micro_batches > 0 ? o.micro_batches : o.batch_size; }

Parallel make_parallel(std::shared_ptr<nn::Module> model, const TrainOptions& o, ScalarType dtype) {
  Parallel p;
  p.model = model;
  if (o.fsdp == "none") return p;
  p.pg = dist::init_process_group();
  p.rank = p.pg->rank();
  p.world = p.pg->size();
  STRIDER_CHECK(o.batch_size % p.world == 0, "train", "--batch-size ", o.batch_size, " does not split evenly over ",
                p.world, " ranks");
  if (o.fsdp == "ddp") {
    auto ddp = fsdp::DistributedDataParallel::wrap(
        model, p.pg,
        {.deterministic = o.deterministic, .micro_batches = o.deterministic ? static_cast<int>(micro_batches(o)) : 0});
    p.engine = &ddp->engine();
    p.model = ddp;
    return p;
  }
  fsdp::FSDPOptions f;
  f.sharding_strategy = fsdp::parse_sharding_strategy(o.fsdp);
  f.shard_group_size = o.shard_group_size;
  f.auto_wrap_policy = fsdp::size_based_auto_wrap_policy(o.fsdp_min_params);
  f.cpu_offload.offload_params = o.fsdp_offload;
  f.sync_module_states = true;
  f.deterministic = o.deterministic;
  if (o.deterministic) f.micro_batches = static_cast<int>(micro_batches(o));
  if (dtype == kBFloat16)
    f.mixed_precision = fsdp::MixedPrecision{.param_dtype = kBFloat16, .reduce_dtype = kFloat, .buffer_dtype = {}};
  auto wrapped = fsdp::FullyShardedDataParallel::wrap(model, p.pg, f);
  p.fsdp = p.engine = wrapped.get();
  p.model = wrapped;
  return p;
}

int train_loop(const TrainOptions& o);

// Every flag that shapes the run, one per line: ranks started with different ones would issue
// different collectives (or silently train on different settings), so they are compared first.
std::vector<std::string> describe_config(const TrainOptions& o) {
  std::ostringstream lr, wd, ls;
  lr.precision(17);
  wd.precision(17);
  ls.precision(17);
  lr << o.lr;
  wd << o.weight_decay;
  ls << o.label_smoothing;
  return {"--model " + o.model, "--text-file " + o.text_file, "--n-layer " + std::to_string(o.n_layer),
          "--n-head " + std::to_string(o.n_head), "--n-embd " + std::to_string(o.n_embd), "--seq " + std::to_string(o.seq),
          "--memory-format " + o.memory_format, "--dtype " + o.dtype, "--optimizer " + o.optimizer,
          "--epochs " + std::to_string(o.epochs), "--batch-size " + std::to_string(o.batch_size), "--lr " + lr.str(),
          "--weight-decay " + wd.str(), "--label-smoothing " + ls.str(), "--seed " + std::to_string(o.seed),
          "--data-dir " + o.data_dir, "--limit-batches " + std::to_string(o.limit_batches), "--fsdp " + o.fsdp,
          "--fsdp-min-params " + std::to_string(o.fsdp_min_params), "--fsdp-offload " + std::to_string(o.fsdp_offload),
          "--optimizer-in-backward " + std::to_string(o.optimizer_in_backward),
          "--deferred-init " + std::to_string(o.deferred_init), "--activation-checkpointing " + std::to_string(o.activation_checkpointing),
          "--export-model " + o.export_model,
          "--async-checkpoint " + std::to_string(o.async_checkpoint),
          "--shard-group-size " + std::to_string(o.shard_group_size),
          "--deterministic " + std::to_string(o.deterministic) + " --micro-batches " + std::to_string(o.micro_batches),
          "--resume " + std::string(o.resume.empty() ? "no" : "yes"), "--reset-optimizer " + std::to_string(o.reset_optimizer),
          "--checkpoint-every " + std::to_string(o.checkpoint_every), "--max-steps " + std::to_string(o.max_steps),
          "--keep-checkpoints " + std::to_string(o.keep_checkpoints),
          "--collective-timeout " + std::to_string(o.collective_timeout)};
}

}  // namespace

Tensor run_model(nn::Module& model, const Tensor& input, ScalarType cast_dtype) {
  if (cast_dtype != kBFloat16) return model(input);
  nn::CastParameters cast(model, kBFloat16);
  return model(input);
}

void validate(const TrainOptions& o) {
  // The parser's ranges let NaN through (every comparison with it is false).
  for (auto [flag, v] : {std::pair{"--lr", o.lr}, {"--weight-decay", o.weight_decay},
                         {"--label-smoothing", o.label_smoothing}, {"--collective-timeout", o.collective_timeout}})
    STRIDER_CHECK(std::isfinite(v), "train", flag, " ", v, " is not a finite number");
  if (o.model == "gpt") {
    STRIDER_CHECK(!o.text_file.empty(), "train", "--model gpt trains on a text file; pass --text-file PATH");
    STRIDER_CHECK(o.n_embd % o.n_head == 0, "train", "--n-embd ", o.n_embd, " must be a multiple of --n-head ", o.n_head,
                  " (each head gets n_embd / n_head channels)");
  } else {
    STRIDER_CHECK(o.text_file.empty(), "train", "--text-file is for --model gpt, not --model ", o.model);
  }
  if (!o.export_model.empty()) {  // checked now rather than after the training it would end
    const std::filesystem::path file(o.export_model), dir = file.has_parent_path() ? file.parent_path() : ".";
    STRIDER_CHECK(!std::filesystem::is_directory(file), "train", "--export-model ", o.export_model,
                  " is a directory; pass the safetensors file to write");
    STRIDER_CHECK(std::filesystem::is_directory(dir) && ::access(dir.c_str(), W_OK) == 0, "train", "--export-model ",
                  o.export_model, ": ", dir.string(), " is not a writable directory; create it or pick another path");
  }
  STRIDER_CHECK(!o.reset_optimizer || !o.resume.empty(), "train", "--reset-optimizer only applies with --resume");
  STRIDER_CHECK(!o.fsdp_offload || (o.fsdp != "none" && o.fsdp != "ddp"), "train",
                "--fsdp-offload needs a sharding strategy (--fsdp full_shard, shard_grad_op, ...), not --fsdp ", o.fsdp);
  STRIDER_CHECK(!o.optimizer_in_backward || o.fsdp != "none", "train",
                "--optimizer-in-backward steps each unit as the data-parallel engine reduces its gradients; add --fsdp "
                "(any strategy, it runs alone too), e.g. --fsdp full_shard");
  STRIDER_CHECK(o.shard_group_size == 0 || o.fsdp.rfind("hybrid_shard", 0) == 0, "train",
                "--shard-group-size is for --fsdp hybrid_shard or hybrid_shard_grad_op, not --fsdp ", o.fsdp);
  STRIDER_CHECK(!o.out_dir.empty(), "train", "--out must name a directory");
  STRIDER_CHECK(!o.deterministic || o.fsdp != "none", "train",
                "--deterministic sums gradients exactly through the data-parallel engine; add --fsdp (any strategy, "
                "it runs alone too), e.g. --fsdp full_shard");
  STRIDER_CHECK(o.micro_batches == 0 || o.deterministic, "train", "--micro-batches only applies with --deterministic");
  STRIDER_CHECK(!o.deterministic || (o.batch_size > 0 && o.batch_size % micro_batches(o) == 0), "train",
                "--micro-batches ", micro_batches(o), " does not divide --batch-size ", o.batch_size,
                "; each micro-batch must hold the same number of samples");
}

// Fingerprints of the full parameters and optimizer state (the same on every rank; collective
// under data parallelism), for comparing runs bit for bit.
std::pair<std::string, std::string> state_digests(nn::Module& model, fsdp::FullyShardedDataParallel* engine,
                                                  optim::Optimizer& opt) {
  std::map<std::string, Tensor> params;
  std::map<std::string, std::map<std::string, Tensor>> state;
  if (engine) {
    params = engine->full_state_dict();
    for (auto& [name, b] : engine->named_buffers()) params.erase(name);
    state = engine->full_optimizer_state_dict(opt);
  } else {
    for (auto& [name, p] : model.named_parameters()) params[name] = p;
    state = opt.state();
  }
  std::map<std::string, Tensor> flat;
  for (auto& [name, keys] : state)
    for (auto& [key, t] : keys) flat[name + "." + key] = t;
  flat["(optimizer steps)"] = full({1}, opt.step_count(), kLong);
  return {io::tensors_sha256(params), io::tensors_sha256(flat)};
}

int run_train(const TrainOptions& o) {
  if (o.fsdp == "none") return train_loop(o);
  // Under MPI a failing rank ends the whole job with its message instead of hanging the others.
  auto pg = dist::init_process_group(
      nullptr, nullptr, {.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.collective_timeout * 1000))});
  return dist::run_or_abort(*pg, [&] {
    dist::check_same_across_ranks(*pg, "strider train's flags", describe_config(o));
    return train_loop(o);
  });
}

namespace {

int train_loop(const TrainOptions& o) {
  // Kernels split reductions by thread count: deterministic runs compare equal thread counts.
  if (o.threads > 0 || o.deterministic) omp_set_num_threads(o.threads > 0 ? o.threads : 1);
  manual_seed(o.seed);
  const MemoryFormat fmt = memory_format_from_string(o.memory_format);
  const ScalarType dtype = scalar_type_from_string(o.dtype);
  STRIDER_CHECK(dtype == kFloat || dtype == kBFloat16, "train", "--dtype must be float32 or bfloat16");
  STRIDER_CHECK(o.epochs > 0 && o.batch_size > 0 && o.lr > 0, "train", "epochs, batch size and lr must be positive");
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  STRIDER_CHECK(!ec && std::filesystem::is_directory(o.out_dir), "train", "cannot create the --out directory '",
                o.out_dir, "': ", ec ? ec.message() : "a file of that name is in the way");

  std::unique_ptr<TrainTask> task = o.model == "gpt" ? make_text_task(o) : make_image_task(o);
  std::shared_ptr<nn::Module> base_model;
  {
    std::optional<nn::DeferredInit> deferred;
    if (o.deferred_init) deferred.emplace(o.seed);
    base_model = task->make_model();
  }
  if (o.activation_checkpointing) {
    // The models' repeated blocks: what FSDP wraps as units and what PyTorch's recipes checkpoint.
    static const std::set<std::string> kBlocks = {"Block", "BasicBlock", "Bottleneck"};
    const int n = nn::apply_activation_checkpointing(*base_model, [](nn::Module& m) { return kBlocks.count(m.type_name()) > 0; });
    STRIDER_CHECK(n > 0, "train", "--activation-checkpointing: ", task->model_signature(),
                  " has no blocks to checkpoint (GPT's Block, ResNet's BasicBlock or Bottleneck); use --model gpt, "
                  "fmnist_resnet or resnet18, or leave the flag out");
  }
  base_model->to(fmt);
  const int64_t model_parameters = base_model->num_parameters();  // before sharding: the whole model's
  Parallel par = make_parallel(base_model, o, dtype);  // FSDP and DDP materialize what each rank keeps
  if (o.deferred_init && !par.engine) nn::materialize(*base_model);
  auto& model = par.model;
  const bool lead = par.rank == 0;  // only rank 0 prints and writes shared files
  task->open_data(par.rank, par.world, o.batch_size / par.world, par.fsdp ? kFloat : dtype);
  std::unique_ptr<optim::Optimizer> opt;
  if (o.optimizer == "sgd") {
    opt = std::make_unique<optim::SGD>(model->named_parameters(),
                                       optim::SGDOptions{.lr = o.lr, .momentum = 0.9, .weight_decay = o.weight_decay, .nesterov = true});
  } else {
    STRIDER_CHECK(o.optimizer == "adamw", "train", "unknown optimizer '", o.optimizer, "'; use sgd or adamw");
    opt = std::make_unique<optim::AdamW>(model->named_parameters(), optim::AdamWOptions{.lr = o.lr, .weight_decay = o.weight_decay});
  }
  // shard_optimizer gathers updated shards after each step; deterministic mode checks each step
  // has all its micro-batches; with --optimizer-in-backward the engine's backward steps (and
  // opt->step() in the loop applies nothing)
  if (par.engine) par.engine->register_optimizer(*opt, {.in_backward = o.optimizer_in_backward});
  const int64_t steps_per_epoch = o.limit_batches > 0 ? std::min(o.limit_batches, task->batches_per_epoch())
                                                      : task->batches_per_epoch();
  STRIDER_CHECK(steps_per_epoch > 0, "train", "the training data makes no full batch of ", o.batch_size,
                "; lower --batch-size");
  const int64_t total_steps = steps_per_epoch * o.epochs;
  optim::CosineWithWarmup sched(*opt, std::min<int64_t>(steps_per_epoch / 2, 200), total_steps);
  // What a checkpoint holds: the data position is in global batches, the same at any world size
  // (the samplers interleave ranks), so a run resumes at another -np where it stopped.
  checkpoint::Checkpointer checkpointer(o.out_dir, par.pg, {.keep_last = o.keep_checkpoints});
  // --async-checkpoint: written while the next steps run, committed at a later optimizer step.
  checkpoint::AsyncCheckpointer background(o.out_dir, par.pg, {.keep_last = o.keep_checkpoints});
  checkpoint::DataPosition position{.epoch = 0, .batches_done = 0, .global_batch_size = o.batch_size};
  std::map<std::string, std::string> run_info{{"model", task->model_signature()}};
  const checkpoint::TrainingState training_state{.model = model.get(), .optimizer = opt.get(), .scheduler = &sched,
                                                 .data = &position, .user = &run_info};
  int64_t global_step = 0;
  if (!o.resume.empty()) {
    const std::string from = checkpoint::resolve_checkpoint(o.resume);
    const checkpoint::Manifest saved = checkpoint::read_manifest(from);
    const auto model_it = saved.user.find("model");
    STRIDER_CHECK(model_it != saved.user.end() && model_it->second == task->model_signature(), "train", from,
                  " holds a '", model_it == saved.user.end() ? std::string("(unnamed)") : model_it->second,
                  "' model, not '", task->model_signature(), "'; pass the model flags it was trained with");
    STRIDER_CHECK(saved.data && saved.data->global_batch_size == o.batch_size, "train", from, " was saved with --batch-size ",
                  saved.data ? saved.data->global_batch_size : 0, " and this run has --batch-size ", o.batch_size,
                  "; its data position counts global batches, so resume with the same --batch-size");
    STRIDER_CHECK(o.reset_optimizer || saved.optimizer == opt->name(), "train", from, " holds ", saved.optimizer,
                  " state but this run uses --optimizer ", opt->name(),
                  "; use the same optimizer, or --reset-optimizer to start with fresh optimizer state");
    checkpoint::load(from, training_state, par.pg.get(), {.optimizer = !o.reset_optimizer});
    STRIDER_CHECK(run_info.at("model") == task->model_signature(), "train", "internal: the model signature changed");
    STRIDER_CHECK(position.batches_done <= steps_per_epoch, "train", from, " stopped after batch ",
                  position.batches_done, " of epoch ", position.epoch + 1, " but this run's epochs have ",
                  steps_per_epoch, " batches; resume with the --limit-batches it was saved with");
    global_step = saved.step;
    if (o.reset_optimizer) sched.set_last_step(global_step);
    STRIDER_CHECK(position.epoch < o.epochs, "train", from, " was saved after epoch ", position.epoch,
                  " and --epochs is ", o.epochs, ": nothing is left to train; raise --epochs to train further");
    STRIDER_CHECK(o.max_steps == 0 || global_step < o.max_steps, "train", from, " was saved after step ", global_step,
                  " and --max-steps is ", o.max_steps, ": nothing is left to train; raise --max-steps");
    if (lead && !o.json)
      std::cerr << "resuming " << from << ": step " << global_step << ", epoch " << position.epoch + 1 << " batch "
                << position.batches_done + 1 << "\n";
  }
  const int64_t start_epoch = position.epoch;
  std::string last_saved;
  int64_t last_saved_step = -1;
  auto save = [&] {
    if (o.async_checkpoint) background.save(global_step, training_state);
    else last_saved = checkpointer.save(global_step, training_state);
    last_saved_step = global_step;
  };
  const int64_t stop_step = o.max_steps > 0 ? std::min(o.max_steps, total_steps) : total_steps;

  const bool tty = lead && o.progress && ::isatty(STDERR_FILENO);
  const ScalarType cast_dtype = par.fsdp ? kFloat : dtype;  // FSDP casts through MixedPrecision
  std::ofstream metrics;
  if (lead) {
    metrics.open(o.out_dir + "/metrics.jsonl", o.resume.empty() ? std::ios::trunc : std::ios::app);
    STRIDER_CHECK(metrics.good(), "train", "cannot write ", o.out_dir, "/metrics.jsonl");
  }
  EvalResult score;
  Series loss_curve{"training loss", "step", "loss", {}}, eval_curve{"held-out score", "epoch", "", {}};
  // Deterministic mode: this rank's share of the global batch is micro-batches r, r + W, ...
  // of it (the samplers interleave ranks), that is rows k, k + L, ... of its batch for its k-th
  // micro-batch (L per rank). Each runs with a generator seeded by (seed, step, micro-batch),
  // and the losses are summed exactly, so neither depends on the world size.
  const int64_t total_micro = micro_batches(o), local_micro = total_micro / par.world;
  auto deterministic_step = [&](const io::Batch& b, int64_t global_step) {
    opt->zero_grad();
    dist::ExactSum losses;
    std::optional<nn::CastParameters> cast;
    if (cast_dtype == kBFloat16) cast.emplace(*model, kBFloat16);
    for (int64_t k = 0; k < local_micro; ++k) {
      io::Batch mb;
      mb.input = b.input.slice(0, k, std::nullopt, local_micro).contiguous(b.input.suggest_memory_format());
      mb.target = b.target.slice(0, k, std::nullopt, local_micro).contiguous();
      const int64_t j = par.rank + k * par.world;
      manual_seed(o.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(global_step * total_micro + j) + 1);
      Tensor loss = task->loss((*model)(mb.input), mb);
      loss.backward();
      losses.add(loss.item<double>());
    }
    cast.reset();
    opt->step();
    if (par.pg) dist::all_reduce_exact(*par.pg, losses);
    return losses.overflowed() ? std::nan("") : losses.value() / static_cast<double>(total_micro);
  };
  const auto t0 = Clock::now();
  double last_loss = 0;
  if (!o.json && lead)
    std::cerr << "training " << task->model_signature() << " (" << model_parameters << " parameters) on "
              << task->describe() << ", " << o.memory_format << ", " << o.dtype << ", " << omp_get_max_threads()
              << " threads, " << o.epochs << " epochs of " << steps_per_epoch << " steps"
              << (par.world > 1 ? ", " + o.fsdp + " on " + std::to_string(par.world) + " ranks" : std::string()) << "\n";
  for (int64_t epoch = start_epoch; epoch < o.epochs && global_step < stop_step; ++epoch) {
    const int64_t first_batch = epoch == start_epoch ? position.batches_done : 0;
    task->start_epoch(epoch, first_batch);
    const auto te = Clock::now();
    double loss_sum = 0;
    int64_t step = first_batch, samples = 0, run = 0;  // run: batches trained in this process
    while (step < steps_per_epoch && global_step < stop_step) {
      auto b = task->next();
      if (!b) break;
      if (o.deterministic) {
        last_loss = deterministic_step(*b, global_step);
      } else {
        Tensor loss;
        {
          std::optional<nn::CastParameters> cast;
          if (cast_dtype == kBFloat16) cast.emplace(*model, kBFloat16);
          loss = task->loss((*model)(b->input), *b);
          opt->zero_grad();
          loss.backward();
        }
        opt->step();
        last_loss = loss.item<double>();
        if (par.pg) {  // report the global batch's loss
          Tensor l = full({1}, last_loss, kDouble);
          par.pg->all_reduce(l, dist::ReduceOp::Avg);
          last_loss = l.item<double>();
        }
      }
      sched.step();
      STRIDER_CHECK(std::isfinite(last_loss), "train", "the loss became ", last_loss, " at epoch ", epoch + 1,
                    " step ", step + 1, "; lower the learning rate (--lr)");
      loss_sum += last_loss;
      samples += b->target.numel();
      ++step;
      ++run;
      ++global_step;
      position = step == steps_per_epoch ? checkpoint::DataPosition{epoch + 1, 0, o.batch_size}
                                         : checkpoint::DataPosition{epoch, step, o.batch_size};
      if (o.checkpoint_every > 0 && global_step % o.checkpoint_every == 0 && global_step < stop_step) save();
      loss_curve.points.emplace_back(static_cast<double>(global_step), last_loss);
      const double el = seconds_since(te);
      const bool report = tty ? (step % 5 == 0 || step == steps_per_epoch) : (step % std::max<int64_t>(1, steps_per_epoch / 4) == 0);
      if (lead && o.progress && !o.json && report) {
        const double rate = static_cast<double>(samples * par.world) / std::max(el, 1e-9);
        const double eta = (stop_step - global_step) * (el / run);
        print_progress(epoch + 1, o.epochs, step, steps_per_epoch, loss_sum / run, rate, task->sample_unit(), eta, tty);
      }
    }
    if (tty && !o.json) std::fputc('\n', stderr);
    samples *= par.world;
    const double epoch_s = seconds_since(te);
    score = task->evaluate(*model, cast_dtype);
    eval_curve.y_label = score.metric;
    eval_curve.points.emplace_back(static_cast<double>(epoch + 1), score.value);
    nlohmann::json rec = {{"epoch", epoch + 1}, {"step", global_step}, {"train_loss", loss_sum / std::max<int64_t>(run, 1)},
                          {score.metric, score.value}, {"epoch_seconds", epoch_s},
                          {std::string(task->sample_unit()) + "_per_s", samples / std::max(epoch_s, 1e-9)},
                          {"lr", opt->lr()}};
    if (lead) metrics << json_line(rec) << "\n" << std::flush;
    if (!o.json && lead)
      std::cerr << "epoch " << epoch + 1 << (step < steps_per_epoch ? " (stopped at --max-steps)" : "")
                << ": train loss " << loss_sum / std::max<int64_t>(run, 1) << ", " << score.summary << ", " << epoch_s
                << " s\n";
    if (o.checkpoint_every == 0 && global_step < stop_step) save();
  }
  if (last_saved_step != global_step) save();  // the end of training always saves
  if (o.async_checkpoint) last_saved = background.wait();
  if (!o.export_model.empty()) checkpoint::save_full(o.export_model, *model, global_step, par.pg.get());
  if (!o.json) task->after_training(*model, cast_dtype, lead);
  const double total_s = seconds_since(t0);
  std::pair<std::string, std::string> digests;
  if (o.json) {
    digests = state_digests(*model, par.engine, *opt);  // collective: every rank
    // Every rank hashed the same full state; a difference would mean the ranks diverged.
    if (par.pg)
      dist::check_same_across_ranks(*par.pg, "params_sha256 and optimizer_sha256", {digests.first, digests.second});
  }
  if (!lead) return 0;
  eval_curve.title = score.metric;
  write_svg_plot(o.out_dir + "/curves.svg", {loss_curve, eval_curve});
  nlohmann::json summary = {{"model", task->model_signature()}, {"memory_format", o.memory_format},
                            {"dtype", o.dtype}, {"epochs", o.epochs}, {score.metric, score.value},
                            {"final_loss", last_loss}, {"seconds", total_s}, {"out_dir", o.out_dir},
                            {"parallel", o.fsdp}, {"strategy", o.fsdp}, {"ranks", par.world},
                            {"world_size", par.world}, {"deterministic", o.deterministic},
                            {"threads", omp_get_max_threads()}, {"steps", global_step},
                            {"checkpoint", last_saved}};
  if (!o.export_model.empty()) summary["exported_model"] = o.export_model;
  if (o.async_checkpoint) {
    const checkpoint::AsyncSaveStats st = background.stats();
    summary["checkpoint_stall_seconds"] = st.stall_seconds;
    summary["checkpoint_max_stall_seconds"] = st.max_stall_seconds;
  }
  if (o.deterministic) summary["micro_batches"] = total_micro;
  if (o.json) {
    summary["params_sha256"] = digests.first;
    summary["optimizer_sha256"] = digests.second;
  }
  if (o.json) {
    std::cout << json_line(summary) << "\n";
  } else {
    const std::string extent = global_step < total_steps
                                   ? "step " + std::to_string(global_step) + " of " + std::to_string(total_steps) +
                                         " (stopped at --max-steps)"
                                   : std::to_string(o.epochs) + " epochs";
    std::cout << "done: " << extent << " in " << total_s << " s, " << score.summary << "\n  metrics "
              << o.out_dir << "/metrics.jsonl, plot " << o.out_dir << "/curves.svg, checkpoint " << last_saved << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace strider::tools
