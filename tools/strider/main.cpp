// The `strider` command: `train` (the default job: a CNN on Fashion-MNIST, or a GPT on a text
// file, alone or under mpirun), `launch` (a supervisor that restarts a failed job), `bench model`,
// `ckpt` (inspect, verify, reshard, consolidate), and `demo`, a tour of the
// memory-format API that prints what PyTorch prints for the same calls.
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <strider/strider.h>

#include "bench.h"
#include "bench_loader.h"
#include "ckpt.h"
#include "flag_checks.h"
#include "launch.h"
#include "train.h"
#include "train_task.h"
#include "train_flags.h"

using namespace strider;

namespace {

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

// `strider ckpt ...`: what each subcommand reads.
struct CkptArgs {
  std::vector<std::string> paths;
  std::string path, out, strategy;
  int64_t world_size = 1;
  bool json = false;
};

struct CkptCommands {
  CLI::App *inspect, *verify, *reshard, *consolidate;
};

CkptCommands add_ckpt_commands(CLI::App& app, CkptArgs& a) {
  const char* path_help = "a checkpoint directory, or a run directory (its latest checkpoint)";
  auto* ckpt = app.add_subcommand("ckpt", "checkpoints, offline (no MPI)");
  ckpt->require_subcommand(1);
  CkptCommands c;
  c.inspect = ckpt->add_subcommand("inspect", "what a checkpoint holds (its manifest, checked against its files' headers)");
  c.inspect->add_option("path", a.path, path_help)->required()->check(tools::non_empty_argument());
  c.inspect->add_flag("--json", a.json, "print the manifest itself");
  c.verify = ckpt->add_subcommand("verify", "check that checkpoints are complete and uncorrupted");
  c.verify
      ->add_option("paths", a.paths,
                   "checkpoint directories, run directories (their latest checkpoint) or safetensors files")
      ->required()
      ->check(tools::non_empty_argument());
  c.reshard = ckpt->add_subcommand("reshard", "rewrite a checkpoint for another world size or strategy");
  c.reshard->add_option("path", a.path, path_help)->required()->check(tools::non_empty_argument());
  c.reshard->add_option("out", a.out, "the new checkpoint directory (must not exist)")->required()->check(tools::non_empty_argument());
  c.reshard->add_option("--world-size", a.world_size, "ranks of the new layout")
      ->check(tools::whole_range<int64_t>(1, int64_t{1} << 16))->required();
  std::string strategies = "local | ddp";
  for (const std::string& s : fsdp::strategy_names()) strategies += " | " + s;
  c.reshard->add_option("--strategy", a.strategy, strategies + " (default: the checkpoint's)")->check(tools::non_empty());
  c.consolidate = ckpt->add_subcommand("consolidate", "the model's whole tensors in one safetensors file");
  c.consolidate->add_option("path", a.path, path_help)->required()->check(tools::non_empty_argument());
  c.consolidate->add_option("out", a.out, "the safetensors file to write (must not exist)")->required()
      ->check(tools::non_empty_argument());
  return c;
}

CLI::App* add_bench_command(CLI::App& app, tools::BenchOptions& b) {
  auto* bench = app.add_subcommand("bench", "benchmarks");
  bench->require_subcommand(1);
  auto* model = bench->add_subcommand("model", "time training steps or inference of a model");
  model->add_option("--model", b.model, "resnet18 | resnet34 | resnet50 | fmnist_resnet")
      ->check(CLI::IsMember({"resnet18", "resnet34", "resnet50", "fmnist_resnet"}))->capture_default_str();
  model->add_option("--mode", b.mode, "train | infer")->check(CLI::IsMember({"train", "infer"}))->capture_default_str();
  model->add_option("--batch", b.batch)->check(tools::whole_range<int64_t>(1, 4096))->capture_default_str();
  model->add_option("--image-size", b.image_size)->check(tools::whole_range<int64_t>(1, 4096))->capture_default_str();
  model->add_option("--memory-format", b.memory_format, "channels_last | contiguous")
      ->check(CLI::IsMember({"channels_last", "contiguous"}))->capture_default_str();
  model->add_option("--dtype", b.dtype, "float32 | bfloat16")->check(CLI::IsMember({"float32", "bfloat16"}))
      ->capture_default_str();
  model->add_option("--threads", b.threads)->check(tools::whole_range<int>(1, 256));
  model->add_option("--warmup", b.warmup)->check(tools::whole_range<int64_t>(0, 1'000'000))->capture_default_str();
  model->add_option("--steps", b.steps)->check(tools::whole_range<int64_t>(1, 1'000'000))->capture_default_str();
  model->add_flag("--json", b.json, "print one JSON object");
  return model;
}

CLI::App* add_bench_loader_command(CLI::App& bench, tools::BenchLoaderOptions& b) {
  auto* loader = bench.add_subcommand("loader", "the trainer's data loader's throughput beside a training step's, "
                                      "and the share of a step spent waiting for data");
  loader->add_option("--image-folder", b.image_folder, "root/<class>/<image> (ResNet-50 unless --model)")
      ->check(tools::non_empty());
  loader->add_option("--tokens", b.tokens, "a token file (GPT-2 small's shape unless --n-layer ...)")
      ->check(tools::non_empty());
  loader->add_option("--model", b.model, "resnet18 | resnet34 | resnet50 | small_cnn | fmnist_resnet | gpt")
      ->check(CLI::IsMember(tools::model_names()));
  loader->add_option("--batch", b.batch)->check(tools::whole_range<int64_t>(1, 4096))->capture_default_str();
  loader->add_option("--image-size", b.image_size, "default: 224 (--model small_cnn: 28, the only side it takes)")
      ->check(tools::whole_range<int64_t>(1, 4096));
  loader->add_option("--vocab-size", b.vocab_size, "default: the largest id + 1")->check(tools::whole_range<int64_t>(1, 1 << 30));
  loader->add_option("--seq", b.seq)->check(tools::whole_range<int64_t>(1, 1 << 16))->capture_default_str();
  loader->add_option("--n-layer", b.n_layer)->check(tools::whole_range<int64_t>(1, 1000))->capture_default_str();
  loader->add_option("--n-head", b.n_head)->check(tools::whole_range<int64_t>(1, 1024))->capture_default_str();
  loader->add_option("--n-embd", b.n_embd)->check(tools::whole_range<int64_t>(1, 1 << 16))->capture_default_str();
  loader->add_option("--workers", b.workers, "loader threads")->check(tools::whole_range<int64_t>(0, 64))->capture_default_str();
  loader->add_option("--threads", b.threads, "OpenMP threads (default: all cores)")->check(tools::whole_range<int>(1, 256));
  loader->add_option("--steps", b.steps)->check(tools::whole_range<int64_t>(1, 1'000'000))->capture_default_str();
  loader->add_flag("--json", b.json, "print one JSON object");
  return loader;
}

// A flag given twice is refused in every command, value flags and switches alike (--lr 1e-3 ...
// --lr 5 ran with 5, silently). Lists (ckpt verify's paths, launch's command) take many values.
void refuse_repeated_flags(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) o->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  for (CLI::App* sub : app.get_subcommands({})) refuse_repeated_flags(*sub);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"strider: C++ deep learning with PyTorch-exact memory formats"};
  app.require_subcommand(0, 1);
  auto* demo_cmd = app.add_subcommand("demo", "tour of the memory-format API");
  tools::TrainOptions t;
  auto* train_cmd = app.add_subcommand(
      "train", "train a CNN on Fashion-MNIST (the default job) or an image folder, or a GPT on a text or token file");
  tools::add_train_flags(*train_cmd, t);
  CkptArgs ck;
  const CkptCommands ckpt = add_ckpt_commands(app, ck);
  tools::BenchOptions b;
  auto* bench_model = add_bench_command(app, b);
  tools::BenchLoaderOptions bl;
  auto* bench_loader = add_bench_loader_command(*app.get_subcommand("bench"), bl);
  tools::LaunchOptions l;
  auto* launch_cmd = app.add_subcommand("launch", "start a training job's ranks, watch them, and restart the job from "
                                        "its latest checkpoint when a rank or host fails or freezes");
  tools::add_launch_flags(*launch_cmd, l);
  refuse_repeated_flags(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print as CLI11 formats them; a bad flag is one line, as every other
    // error here: "strider: --threads: Value 0 not in range [1 - 256] (...)".
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::string command = "strider";
    const CLI::App* sub = &app;
    while (!sub->get_subcommands().empty()) {
      sub = sub->get_subcommands().front();
      command += " " + sub->get_name();
    }
    // "strider ckpt bogus": CLI11 says only that a subcommand is required.
    const std::vector<const CLI::App*> commands = sub->get_subcommands({});
    if (e.get_name() == "RequiredError" && !commands.empty()) {
      const std::vector<std::string> left = sub->remaining();
      std::string names;
      for (const CLI::App* c : commands) names += (names.empty() ? "" : " | ") + c->get_name();
      std::cerr << "strider: " + (left.empty() ? command + " needs a command" : "unknown command '" + left.front() +
                                  "' for " + command) + ": " + names + " (" + command + " --help)\n";
      return e.get_exit_code();
    }
    const std::string what = e.what();
    const std::string repeated = ": At Most 1 required but received ";  // CLI11's words for a repeated flag
    if (const size_t at = what.find(repeated); e.get_name() == "ArgumentMismatch" && at != std::string::npos) {
      std::cerr << "strider: " << what.substr(0, at) << " is given " << what.substr(at + repeated.size())
                << " times but takes one value; give it once (" << command << " --help lists the flags)\n";
      return e.get_exit_code();
    }
    std::cerr << "strider: " << what << " (" << command << " --help lists the flags)\n";
    return e.get_exit_code();
  }
  // train is the default job: its defaults matter only when it runs (ckpt verify printed that it
  // would write to strider-run-2).
  const bool training = train_cmd->parsed() || app.get_subcommands().empty();
  if (training) {
    tools::apply_model_defaults(*train_cmd, t);
    tools::choose_default_out(*train_cmd, t);
  }
  // Nothing escapes: every failure is one line naming what went wrong, and a non-zero exit.
  try {
    apply_environment_switches();
    if (demo_cmd->parsed()) return demo();
    if (ckpt.inspect->parsed()) return tools::ckpt_inspect(ck.path, ck.json);
    if (ckpt.verify->parsed()) return tools::ckpt_verify(ck.paths);
    if (ckpt.reshard->parsed()) return tools::ckpt_reshard(ck.path, ck.out, ck.world_size, ck.strategy);
    if (ckpt.consolidate->parsed()) return tools::ckpt_consolidate(ck.path, ck.out);
    if (bench_model->parsed()) return tools::run_bench_model(b);
    if (bench_loader->parsed()) return tools::run_bench_loader(bl);
    if (launch_cmd->parsed()) return tools::run_launch(l);
    tools::validate(t);
    return tools::run_train(t);  // the default job
  } catch (const Error& e) {
    std::cerr << "strider: " + std::string(e.what()) + "\n";  // one write: ranks' lines do not interleave
  } catch (const std::bad_alloc&) {
    std::cerr << "strider: out of memory (a size read from a file or flag may be too large)\n";
  } catch (const std::exception& e) {
    std::cerr << "strider: unexpected error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "strider: unexpected error of an unknown type\n";
  }
  return 1;
}
