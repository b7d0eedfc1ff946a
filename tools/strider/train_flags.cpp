#include "train_flags.h"

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <type_traits>

#include <strider/strider.h>

#include "flag_checks.h"
#include "launcher_env.h"
#include "optimizer_choice.h"
#include "train_task.h"

namespace strider::tools {
namespace {

std::string join(const std::vector<std::string>& names, const std::string& between) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : between) + n;
  return out;
}

std::vector<std::string> parallel_names() {
  std::vector<std::string> names = {"none", "ddp"};
  for (const std::string& s : fsdp::strategy_names()) names.push_back(s);
  return names;
}

// The model and its numbers. Each row: flag, member, ranks, check, help[, default].
std::vector<TrainFlag> model_flags() {
  using O = TrainOptions;
  [[maybe_unused]] constexpr auto Agree = AcrossRanks::Agree, WhetherSet = AcrossRanks::AgreeWhetherSet,
                                  Local = AcrossRanks::Local;
  [[maybe_unused]] constexpr auto Unset = Default::Unset;
  return {
      {"--model", &O::model, Agree, CLI::IsMember(model_names()), join(model_names(), " | ")},
      {"--text-file", &O::text_file, Agree, {}, "--model gpt: the text to learn (bytes are tokens)", Unset},
      {"--n-layer", &O::n_layer, Agree, CLI::Range(1, 1000), "--model gpt: transformer blocks"},
      {"--n-head", &O::n_head, Agree, CLI::Range(1, 1024), "--model gpt: attention heads"},
      {"--n-embd", &O::n_embd, Agree, CLI::Range(1, 1 << 16), "--model gpt: embedding width (a multiple of --n-head)"},
      {"--seq", &O::seq, Agree, CLI::Range(1, 1 << 16), "--model gpt: context length in bytes"},
      {"--memory-format", &O::memory_format, Agree, CLI::IsMember({"channels_last", "contiguous"}),
       "channels_last | contiguous"},
      {"--dtype", &O::dtype, Agree, CLI::IsMember({"float32", "bfloat16"}),
       "float32 | bfloat16 (bf16 compute, float32 master weights)"},
      {"--deferred-init", &O::deferred_init, Agree, {},
       "build the model without allocating it; --fsdp materializes only each rank's shards, drawn by (--seed, "
       "parameter name, element) so the values are the same at any -np"},
      {"--activation-checkpointing", &O::activation_checkpointing, Agree, {},
       "keep only each block's input in forward and recompute the block in backward (GPT's Block, ResNet's "
       "BasicBlock and Bottleneck): less memory for one more forward"},
  };
}

// The data, the optimizer and the schedule. Each row: flag, member, ranks, check, help[, default].
std::vector<TrainFlag> training_flags() {
  using O = TrainOptions;
  [[maybe_unused]] constexpr auto Agree = AcrossRanks::Agree, WhetherSet = AcrossRanks::AgreeWhetherSet,
                                  Local = AcrossRanks::Local;
  [[maybe_unused]] constexpr auto Unset = Default::Unset;
  const auto count = CLI::Range(int64_t{1}, int64_t{1} << 20);
  const auto steps = CLI::Range(int64_t{1}, int64_t{1} << 40);
  return {
      {"--data-dir", &O::data_dir, Agree, {}, "where the Fashion-MNIST files are"},
      {"--tokens", &O::tokens, Agree, {},
       "--model gpt: a token file to train on (nanoGPT's uint16 .bin, llm.c's .bin, or raw uint32 with "
       "--token-dtype uint32); instead of --text-file",
       Unset},
      {"--val-tokens", &O::val_tokens, Agree, {},
       "--tokens: the validation token file (default: the last 10% of --tokens is held out)", Unset},
      {"--token-dtype", &O::token_dtype, Agree, CLI::IsMember({"auto", "uint16", "uint32"}),
       "--tokens: auto (llm.c's header, else uint16) | uint16 | uint32"},
      {"--vocab-size", &O::vocab_size, Agree, CLI::Range(int64_t{1}, int64_t{1} << 32),
       "--tokens: the GPT's vocabulary; every token id must be below it (default: the largest id + 1)", Unset},
      {"--image-folder", &O::image_folder, Agree, {},
       "the CNNs: train on root/<class>/<image>.png|jpg|jpeg instead of Fashion-MNIST (classes from the folders, "
       "channels from the images)",
       Unset},
      {"--val-image-folder", &O::val_image_folder, Agree, {},
       "--image-folder: the validation images, same classes (default: a seeded 10% of --image-folder held out)",
       Unset},
      {"--image-size", &O::image_size, Agree, CLI::Range(int64_t{1}, int64_t{1} << 14),
       "--image-folder: resize and center-crop every image to this side (default: the first image's shorter side; --model small_cnn: 28)",
       Unset},
      {"--data-workers", &O::data_workers, Local, CLI::Range(int64_t{0}, int64_t{64}),
       "--tokens / --image-folder: loader threads reading and decoding ahead of the step (0: in the training "
       "thread); batches are the same for any count"},
      {"--seed", &O::seed, Agree, {}, "initial weights and data order"},
      {"--optimizer", &O::optimizer, Agree, CLI::IsMember(optimizer_names()),
       join(optimizer_names(), " | ") + " (gpt: adamw)"},
      {"--epochs", &O::epochs, Agree, CLI::Range(1, 1'000'000), "passes over the training data"},
      {"--batch-size", &O::batch_size, Agree, count, "samples per optimizer step, over all ranks"},
      {"--lr", &O::lr, Agree, decimal_range(1e-12, 1e3), "peak learning rate (warmup, then cosine decay; gpt: 1e-3)"},
      {"--weight-decay", &O::weight_decay, Agree, decimal_range(0.0, 1e3), "(gpt: 0.01)"},
      {"--label-smoothing", &O::label_smoothing, Agree, decimal_range(0.0, 0.999999), "in [0, 1)"},
      {"--max-steps", &O::max_steps, Agree, steps,
       "stop after this many optimizer steps in all, saving; the learning-rate schedule still spans --epochs, so a "
       "run can be split into legs that --resume each other",
       Unset},
      {"--limit-batches", &O::limit_batches, Agree, count, "stop each epoch after this many batches", Unset},
  };
}

// Where the run writes, checkpoints and resumes. Each row: flag, member, ranks, check, help[, default].
std::vector<TrainFlag> output_flags() {
  using O = TrainOptions;
  [[maybe_unused]] constexpr auto Agree = AcrossRanks::Agree, WhetherSet = AcrossRanks::AgreeWhetherSet,
                                  Local = AcrossRanks::Local;
  [[maybe_unused]] constexpr auto Unset = Default::Unset;
  const auto steps = CLI::Range(int64_t{1}, int64_t{1} << 40);
  return {
      {"--out", &O::out_dir, Local, {}, "directory for metrics, plot and checkpoints"},
      {"--resume", &O::resume, WhetherSet, {},
       "a checkpoint directory, or a run directory (--out) for its latest checkpoint; any number of ranks and any "
       "--fsdp",
       Unset},
      {"--checkpoint-every", &O::checkpoint_every, Agree, steps,
       "save every N optimizer steps (default: at the end of each epoch; the end of training always saves)", Unset},
      {"--keep-checkpoints", &O::keep_checkpoints, Agree, CLI::Range(0, 1 << 20),
       "committed checkpoints kept in --out (0: all)"},
      {"--reset-optimizer", &O::reset_optimizer, Agree, {}, "with --resume: fresh optimizer state (moments, step)"},
      {"--async-checkpoint", &O::async_checkpoint, Agree, {},
       "write checkpoints in the background while training goes on (committed at a later step; the end of "
       "training waits for the last)"},
      {"--memory-snapshot-every", &O::memory_snapshot_every, Agree, steps,
       "every N steps keep each rank's state in its host's memory and on a partner rank of another host; "
       "strider launch relaunches from it after a lost rank or host, redoing at most N steps",
       Unset},
      {"--memory-snapshot-dir", &O::memory_snapshot_dir, Agree, {},
       "a tmpfs on every host (its own memory, outliving the trainer) for --memory-snapshot-every"},
      {"--memory-snapshot-overlap", &O::memory_snapshot_overlap, Agree, {},
       "with --memory-snapshot-every: the copy to the partner travels while the next step trains (committed "
       "after it), so training waits only for the local write; a relaunch then redoes at most N + 1 steps"},
      {"--export-model", &O::export_model, Agree, {},
       "after training, write the whole model (parameters and buffers under the model's names) to this "
       "safetensors file, streamed to rank 0 a piece at a time (a safetensors file there is replaced: each leg of a "
       "run exports its latest model; anything else there, or a path in a checkpoint directory, is refused)",
       Unset},
      // Agreed: it decides which collectives end the run (the state digests, or the task's closing words).
      {"--json", &O::json, Agree, {}, "print one JSON summary object at the end"},
      {"--progress", &O::progress, Local, {}, "the progress line on stderr (--no-progress: per-epoch lines only)"},
  };
}

// Threads, ranks and how they share the work. Each row: flag, member, ranks, check, help[, default].
std::vector<TrainFlag> parallel_flags() {
  using O = TrainOptions;
  [[maybe_unused]] constexpr auto Agree = AcrossRanks::Agree, WhetherSet = AcrossRanks::AgreeWhetherSet,
                                  Local = AcrossRanks::Local;
  [[maybe_unused]] constexpr auto Unset = Default::Unset;
  const std::vector<std::string> parallel = parallel_names();
  return {
      {"--threads", &O::threads, Local, CLI::Range(1, 256), "OpenMP threads (default: all cores)", Unset},
      {"--fsdp", &O::fsdp, Agree, CLI::IsMember(parallel),
       "data parallelism (run under mpirun; docs/fsdp_strategies.md): " + join(parallel, " | ")},
      {"--shard-group-size", &O::shard_group_size, Agree, CLI::Range(1, 1 << 20),
       "hybrid strategies: ranks per shard group, a divisor of the world size (default: the ranks of one host)", Unset},
      {"--fsdp-min-params", &O::fsdp_min_params, Agree, CLI::Range(int64_t{1}, int64_t{1} << 50),
       "size-based auto-wrap threshold"},
      {"--fsdp-offload", &O::fsdp_offload, Agree, {},
       "keep sharded parameters and optimizer state in an offload file in /tmp between uses"},
      {"--optimizer-state-dtype", &O::optimizer_state_dtype, Agree, CLI::IsMember({"float32", "bfloat16"}),
       "adam, adamw: keep the moments in float32 | bfloat16 (half the optimizer's memory; stochastic rounding)"},
      {"--optimizer-in-backward", &O::optimizer_in_backward, Agree, {},
       "with --fsdp: step each unit's parameters as soon as its gradients are reduced, during backward"},
      {"--deterministic", &O::deterministic, Agree, {},
       "bitwise the same parameters and optimizer state for any world size and strategy (needs --fsdp; default 1 "
       "thread per rank)"},
      {"--micro-batches", &O::micro_batches, Agree, CLI::Range(int64_t{1}, int64_t{1024}),
       "--deterministic: micro-batches per global batch; every world size compared must divide it (default: "
       "--batch-size, one sample each)",
       Unset},
      {"--collective-timeout", &O::collective_timeout, Agree, decimal_range(0.001, 86400.0),
       "seconds a collective may wait for the other ranks before the job ends naming them"},
      {"--heartbeat-timeout", &O::heartbeat_timeout, Agree, decimal_range(0.05, 86400.0),
       "seconds a rank may send no heartbeat (stopped, frozen, its host unreachable) before the job ends naming it; "
       "a slow step or disk does not stop the heartbeat"},
  };
}

std::vector<TrainFlag> make_table() {
  std::vector<TrainFlag> all;
  for (auto group : {model_flags, training_flags, output_flags, parallel_flags})
    for (TrainFlag& f : group()) all.push_back(std::move(f));
  return all;
}

// A value as the ranks compare it: doubles with every digit, so 0.1 and 0.1 + 1e-17 differ.
std::string value_text(const TrainOptions& o, const OptionMember& member) {
  return std::visit(
      [&](auto m) -> std::string {
        const auto& v = o.*m;
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, double>) {
          std::ostringstream s;
          s.precision(17);
          s << v;
          return s.str();
        } else {
          return std::to_string(v);
        }
      },
      member);
}

}  // namespace

const std::vector<TrainFlag>& train_flags() {
  static const std::vector<TrainFlag> table = make_table();
  return table;
}

void add_train_flags(CLI::App& command, TrainOptions& o) {
  for (const TrainFlag& f : train_flags()) {
    CLI::Option* option = std::visit(
        [&](auto m) -> CLI::Option* {
          auto& value = o.*m;
          if constexpr (std::is_same_v<std::decay_t<decltype(value)>, bool>) {
            return command.add_flag(value ? f.name + ",!--no-" + f.name.substr(2) : f.name, value, f.help);
          } else {
            using T = std::decay_t<decltype(value)>;
            CLI::Option* added = command.add_option(f.name, value, f.help);
            if (f.default_in_help == Default::Shown) added->capture_default_str();
            if constexpr (std::is_same_v<T, std::string>) added->check(non_empty());
            if constexpr (std::is_integral_v<T>) added->check(whole_number<T>());
            return added;
          }
        },
        f.member);
    if (f.check) option->check(*f.check);
  }
}

std::vector<std::string> describe_for_ranks(const TrainOptions& o) {
  static const TrainOptions defaults;
  std::vector<std::string> lines;
  for (const TrainFlag& f : train_flags()) {
    if (f.ranks == AcrossRanks::Local) continue;
    const std::string value = value_text(o, f.member);
    const bool given = value != value_text(defaults, f.member);
    lines.push_back(f.name + " " + (f.ranks == AcrossRanks::Agree ? value : given ? "yes" : "no"));
  }
  return lines;
}

void apply_model_defaults(const CLI::App& command, TrainOptions& o) {
  if (o.model != "gpt") return;
  if (command.count("--optimizer") == 0) o.optimizer = "adamw";
  if (command.count("--lr") == 0) o.lr = 1e-3;
  if (command.count("--weight-decay") == 0) o.weight_decay = 0.01;
}

void choose_default_out(const CLI::App& command, TrainOptions& o) {
  if (command.count("--out") > 0 || !o.resume.empty()) return;
  const std::string base = o.out_dir;
  for (int n = 2; !checkpoint::committed_checkpoints(o.out_dir).empty(); ++n) o.out_dir = base + "-" + std::to_string(n);
  if (o.out_dir == base) return;
  if (launcher_process().rank != 0) return;  // before MPI starts: one process says it
  std::cerr << "strider: " << base << " holds an earlier run; this one writes to " << o.out_dir << " (--resume "
            << base << " continues the earlier run)\n";
}

}  // namespace strider::tools
