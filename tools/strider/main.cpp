// The `strider` command: `train` (the default job: a CNN on Fashion-MNIST, or a GPT on a text
// file, alone or under mpirun), `bench model`, `ckpt` (inspect, verify, reshard, consolidate), and `demo`, a tour of the
// memory-format API that prints what PyTorch prints for the same calls.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <strider/strider.h>

#include "bench.h"
#include "ckpt.h"
#include "train.h"

using namespace strider;

namespace {

// An on/off environment switch: unset, empty or "0" is off, "1" is on, anything else an error
// (a typo must not silently leave a mode off).
bool env_switch(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v || std::string(v) == "0") return false;
  STRIDER_CHECK(std::string(v) == "1", "strider", "environment variable ", name, "='", v,
                "' is not a switch; set it to 1 (on) or 0 (off), or unset it");
  return true;
}

void show(const char* what, const Tensor& t) {
  std::cout << "  " << what << ": sizes " << t.sizes() << " strides " << t.strides()
            << "  contiguous=" << t.is_contiguous()
            << " channels_last=" << t.is_contiguous(MemoryFormat::ChannelsLast)
            << " suggest=" << t.suggest_memory_format() << "\n";
}

int demo() {
  std::cout << "strider memory formats (PyTorch semantics)\n\n";
  Tensor x = empty({10, 3, 32, 32});
  show("empty({10,3,32,32})", x);
  Tensor xcl = x.to(MemoryFormat::ChannelsLast);
  show("x.to(ChannelsLast)", xcl);
  show("empty({10,3,16,16}, ChannelsLast)", empty({10, 3, 16, 16}, MemoryFormat::ChannelsLast));
  show("empty({4,1,4,4}) (ambiguous: both formats)", empty({4, 1, 4, 4}));
  show("x.permute(0,2,3,1) (NHWC view)", xcl.permute({0, 2, 3, 1}));
  Tensor bias = randn({1, 3, 1, 1});
  show("channels_last + bias (format propagates)", add(xcl.fill_(1), bias));
  show("relu(channels_last)", relu(xcl));
  show("clone() keeps the format", xcl.clone());
  show("contiguous() converts back", xcl.contiguous());
  show("sum(dim=1, keepdim) is contiguous (SPEC 9)", sum(xcl, {1}, true));
  show("cat([cl, cl], 1) stays channels_last", cat({xcl, xcl}, 1));
  show("empty({2,3,2,3,4}, ChannelsLast3d)", empty({2, 3, 2, 3, 4}, MemoryFormat::ChannelsLast3d));
  std::cout << "\n  small tensor: " << arange(6).reshape({2, 3}).to(kFloat) / 4 << "\n";
  try {
    empty({3, 3}, MemoryFormat::ChannelsLast);
  } catch (const Error& e) {
    std::cout << "\n  bad input gets a clear error:\n    " << e.what() << "\n";
  }
  std::cout << "\n  allocator: current " << memory_stats().current_bytes << " bytes, peak "
            << memory_stats().peak_bytes << " bytes\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"strider: C++ deep learning with PyTorch-exact memory formats"};
  app.require_subcommand(0, 1);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a repeated flag: the last wins
  auto* demo_cmd = app.add_subcommand("demo", "tour of the memory-format API");
  strider::tools::TrainOptions t;
  auto* train_cmd = app.add_subcommand("train", "train a CNN on Fashion-MNIST (the default job) or a GPT on a text file");
  const auto count = CLI::Range(int64_t{1}, int64_t{1} << 20);
  train_cmd->add_option("--model", t.model, "fmnist_resnet | small_cnn | resnet18 | gpt")
      ->check(CLI::IsMember({"fmnist_resnet", "small_cnn", "resnet18", "gpt"}))->capture_default_str();
  train_cmd->add_option("--text-file", t.text_file, "--model gpt: the text to learn (bytes are tokens)");
  train_cmd->add_option("--n-layer", t.n_layer, "--model gpt: transformer blocks")->check(CLI::Range(1, 1000))->capture_default_str();
  train_cmd->add_option("--n-head", t.n_head, "--model gpt: attention heads")->check(CLI::Range(1, 1024))->capture_default_str();
  train_cmd->add_option("--n-embd", t.n_embd, "--model gpt: embedding width (a multiple of --n-head)")
      ->check(CLI::Range(1, 1 << 16))->capture_default_str();
  train_cmd->add_option("--seq", t.seq, "--model gpt: context length in bytes")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  train_cmd->add_option("--memory-format", t.memory_format, "channels_last | contiguous")
      ->check(CLI::IsMember({"channels_last", "contiguous"}))->capture_default_str();
  train_cmd->add_option("--dtype", t.dtype, "float32 | bfloat16 (bf16 compute, float32 master weights)")
      ->check(CLI::IsMember({"float32", "bfloat16"}))->capture_default_str();
  auto* optimizer_opt = train_cmd->add_option("--optimizer", t.optimizer, "sgd | adamw (gpt: adamw)")
                            ->check(CLI::IsMember({"sgd", "adamw"}))->capture_default_str();
  train_cmd->add_option("--epochs", t.epochs)->check(CLI::Range(1, 1'000'000))->capture_default_str();
  train_cmd->add_option("--batch-size", t.batch_size)->check(count)->capture_default_str();
  auto* lr_opt = train_cmd->add_option("--lr", t.lr, "peak learning rate (warmup, then cosine decay; gpt: 1e-3)")
                    ->check(CLI::Range(1e-12, 1e3))->capture_default_str();
  auto* wd_opt = train_cmd->add_option("--weight-decay", t.weight_decay, "(gpt: 0.01)")->check(CLI::Range(0.0, 1e3))
                    ->capture_default_str();
  train_cmd->add_option("--label-smoothing", t.label_smoothing, "in [0, 1)")->check(CLI::Range(0.0, 0.999999))
      ->capture_default_str();
  train_cmd->add_option("--threads", t.threads, "OpenMP threads (default: all cores)")->check(CLI::Range(1, 256));
  train_cmd->add_option("--seed", t.seed)->capture_default_str();
  train_cmd->add_option("--data-dir", t.data_dir)->capture_default_str();
  train_cmd->add_option("--out", t.out_dir, "directory for metrics, plot and checkpoints")->capture_default_str();
  train_cmd->add_option("--resume", t.resume,
                        "a checkpoint directory, or a run directory (--out) for its latest checkpoint; any number "
                        "of ranks and any --fsdp");
  train_cmd->add_option("--checkpoint-every", t.checkpoint_every,
                        "save every N optimizer steps (default: at the end of each epoch; the end of training always saves)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  train_cmd->add_option("--keep-checkpoints", t.keep_checkpoints, "committed checkpoints kept in --out (0: all)")
      ->check(CLI::Range(0, 1 << 20))->capture_default_str();
  train_cmd->add_option("--max-steps", t.max_steps,
                        "stop after this many optimizer steps in all, saving; the learning-rate schedule still spans "
                        "--epochs, so a run can be split into legs that --resume each other")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  train_cmd->add_flag("--reset-optimizer", t.reset_optimizer, "with --resume: fresh optimizer state (moments, step)");
  train_cmd->add_option("--limit-batches", t.limit_batches, "stop each epoch after this many batches")->check(count);
  train_cmd->add_option("--fsdp", t.fsdp,
                        "data parallelism (run under mpirun): none | ddp | no_shard | shard_optimizer (ZeRO-1) | "
                        "shard_grad_op (ZeRO-2) | full_shard (ZeRO-3) | hybrid_shard | hybrid_shard_grad_op")
      ->check(CLI::IsMember({"none", "ddp", "no_shard", "shard_optimizer", "shard_grad_op", "full_shard", "hybrid_shard",
                             "hybrid_shard_grad_op"}))
      ->capture_default_str();
  train_cmd->add_option("--shard-group-size", t.shard_group_size,
                        "hybrid strategies: ranks per shard group, a divisor of the world size (default: the ranks of one host)")
      ->check(CLI::Range(1, 1 << 20));
  train_cmd->add_option("--fsdp-min-params", t.fsdp_min_params, "size-based auto-wrap threshold")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 50))->capture_default_str();
  train_cmd->add_flag("--fsdp-offload", t.fsdp_offload,
                      "keep sharded parameters and optimizer state in an offload file in /tmp between uses");
  train_cmd->add_flag("--optimizer-in-backward", t.optimizer_in_backward,
                      "with --fsdp: step each unit's parameters as soon as its gradients are reduced, during backward");
  train_cmd->add_flag("--deferred-init", t.deferred_init,
                      "build the model without allocating it; --fsdp materializes only each rank's shards, drawn by "
                      "(--seed, parameter name, element) so the values are the same at any -np");
  train_cmd->add_flag("--activation-checkpointing", t.activation_checkpointing,
                      "keep only each block's input in forward and recompute the block in backward (GPT's Block, "
                      "ResNet's BasicBlock and Bottleneck): less memory for one more forward");
  train_cmd->add_flag("--async-checkpoint", t.async_checkpoint,
                      "write checkpoints in the background while training goes on (committed at a later step; the "
                      "end of training waits for the last)");
  train_cmd->add_option("--export-model", t.export_model,
                        "after training, write the whole model (parameters and buffers under the model's names) to "
                        "this safetensors file, streamed to rank 0 a piece at a time");
  train_cmd->add_flag("--deterministic", t.deterministic,
                      "bitwise the same parameters and optimizer state for any world size and strategy "
                      "(needs --fsdp; default 1 thread per rank)");
  train_cmd->add_option("--micro-batches", t.micro_batches,
                        "--deterministic: micro-batches per global batch; every world size compared must divide it "
                        "(default: --batch-size, one sample each)")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  train_cmd->add_option("--collective-timeout", t.collective_timeout,
                        "seconds a collective may wait for the other ranks before the job ends naming them")
      ->check(CLI::Range(0.001, 86400.0))->capture_default_str();
  train_cmd->add_flag("--json", t.json, "print one JSON summary object at the end");
  std::vector<std::string> verify_files;
  std::string ckpt_path, ckpt_out, ckpt_strategy;
  int64_t ckpt_world = 1;
  bool ckpt_json = false;
  const char* path_help = "a checkpoint directory, or a run directory (its latest checkpoint)";
  auto* ckpt_cmd = app.add_subcommand("ckpt", "checkpoints, offline (no MPI)");
  ckpt_cmd->require_subcommand(1);
  auto* ckpt_inspect = ckpt_cmd->add_subcommand("inspect", "what a checkpoint holds (its manifest, checked against its files' headers)");
  ckpt_inspect->add_option("path", ckpt_path, path_help)->required();
  ckpt_inspect->add_flag("--json", ckpt_json, "print the manifest itself");
  auto* ckpt_verify = ckpt_cmd->add_subcommand("verify", "check that checkpoints are complete and uncorrupted");
  ckpt_verify->add_option("paths", verify_files,
                          "checkpoint directories, run directories (their latest checkpoint) or safetensors files")
      ->required();
  auto* ckpt_reshard = ckpt_cmd->add_subcommand("reshard", "rewrite a checkpoint for another world size or strategy");
  ckpt_reshard->add_option("path", ckpt_path, path_help)->required();
  ckpt_reshard->add_option("out", ckpt_out, "the new checkpoint directory (must not exist)")->required();
  ckpt_reshard->add_option("--world-size", ckpt_world, "ranks of the new layout")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16))->required();
  ckpt_reshard->add_option("--strategy", ckpt_strategy,
                           "local | ddp | full_shard | shard_grad_op | no_shard | shard_optimizer | hybrid_shard | "
                           "hybrid_shard_grad_op (default: the checkpoint's)");
  auto* ckpt_consolidate = ckpt_cmd->add_subcommand("consolidate", "the model's whole tensors in one safetensors file");
  ckpt_consolidate->add_option("path", ckpt_path, path_help)->required();
  ckpt_consolidate->add_option("out", ckpt_out, "the safetensors file to write")->required();
  strider::tools::BenchOptions b;
  auto* bench_cmd = app.add_subcommand("bench", "benchmarks");
  auto* bench_model = bench_cmd->add_subcommand("model", "time training steps or inference of a model");
  bench_cmd->require_subcommand(1);
  bench_model->add_option("--model", b.model, "resnet18 | resnet34 | resnet50 | fmnist_resnet")
      ->check(CLI::IsMember({"resnet18", "resnet34", "resnet50", "fmnist_resnet"}))->capture_default_str();
  bench_model->add_option("--mode", b.mode, "train | infer")->check(CLI::IsMember({"train", "infer"}))->capture_default_str();
  bench_model->add_option("--batch", b.batch)->check(CLI::Range(1, 4096))->capture_default_str();
  bench_model->add_option("--image-size", b.image_size)->check(CLI::Range(1, 4096))->capture_default_str();
  bench_model->add_option("--memory-format", b.memory_format, "channels_last | contiguous")
      ->check(CLI::IsMember({"channels_last", "contiguous"}))->capture_default_str();
  bench_model->add_option("--dtype", b.dtype, "float32 | bfloat16")->check(CLI::IsMember({"float32", "bfloat16"}))
      ->capture_default_str();
  bench_model->add_option("--threads", b.threads)->check(CLI::Range(1, 256));
  bench_model->add_option("--warmup", b.warmup)->check(CLI::Range(0, 1'000'000))->capture_default_str();
  bench_model->add_option("--steps", b.steps)->check(CLI::Range(1, 1'000'000))->capture_default_str();
  bench_model->add_flag("--json", b.json, "print one JSON object");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);  // "--threads: Value 0 not in range [1 - 256]" and a usage hint
  }
  if (t.model == "gpt") {  // a transformer's usual recipe unless asked otherwise
    if (optimizer_opt->count() == 0) t.optimizer = "adamw";
    if (lr_opt->count() == 0) t.lr = 1e-3;
    if (wd_opt->count() == 0) t.weight_decay = 0.01;
  }
  // Nothing escapes: every failure is one line naming what went wrong, and a non-zero exit.
  try {
    set_memory_format_check(env_switch("STRIDER_CHECK_MEMORY_FORMAT"));
    set_kernel_verbose(env_switch("STRIDER_VERBOSE"));
    set_kernel_autotune(env_switch("STRIDER_AUTOTUNE"));
    if (demo_cmd->parsed()) return demo();
    if (ckpt_inspect->parsed()) return strider::tools::ckpt_inspect(ckpt_path, ckpt_json);
    if (ckpt_verify->parsed()) return strider::tools::ckpt_verify(verify_files);
    if (ckpt_reshard->parsed()) return strider::tools::ckpt_reshard(ckpt_path, ckpt_out, ckpt_world, ckpt_strategy);
    if (ckpt_consolidate->parsed()) return strider::tools::ckpt_consolidate(ckpt_path, ckpt_out);
    if (bench_model->parsed()) return strider::tools::run_bench_model(b);
    strider::tools::validate(t);
    return strider::tools::run_train(t);  // the default job
  } catch (const Error& e) {
    std::cerr << "strider: " << e.what() << "\n";
  } catch (const std::bad_alloc&) {
    std::cerr << "strider: out of memory (a size read from a file or flag may be too large)\n";
  } catch (const std::exception& e) {
    std::cerr << "strider: unexpected error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "strider: unexpected error of an unknown type\n";
  }
  return 1;
}
