// The training loop of `strider train`, the same for every task, locally and under data
// parallelism. It reads as a user's own loop would: build the model, make it parallel, make
// the optimizer and its schedule, resume, then train and evaluate epoch by epoch.
#include "train.h"

#include <omp.h>

#include <exception>
#include <filesystem>
#include <fstream>
#include <random>

#include <strider/strider.h>

#include "epoch.h"
#include "finish.h"
#include "launcher_env.h"
#include "model_build.h"
#include "optimizer_choice.h"
#include "parallel.h"
#include "resume.h"
#include "run_record.h"
#include "train_flags.h"
#include "training.h"

namespace strider::tools {
namespace {

// This process's threads and generator, and the run directory.
void set_up_process(const TrainOptions& o) {
  // Kernels split reductions by thread count: deterministic runs compare equal thread counts.
  if (o.threads > 0 || o.deterministic) omp_set_num_threads(o.threads > 0 ? o.threads : 1);
  manual_seed(o.seed);
  const ScalarType dtype = scalar_type_from_string(o.dtype);
  STRIDER_CHECK(dtype == kFloat || dtype == kBFloat16, "train", "--dtype must be float32 or bfloat16");
  STRIDER_CHECK(o.epochs > 0 && o.batch_size > 0 && o.lr > 0, "train", "epochs, batch size and lr must be positive");
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  STRIDER_CHECK(!ec && std::filesystem::is_directory(o.out_dir), "train", "cannot create the --out directory '",
                o.out_dir, "': ", ec ? ec.message() : "a file of that name is in the way");
}

// Every rank must see one --out: rank 0 commits each checkpoint from the files every rank wrote
// there, and a rank whose --out is another directory (a node-local disk, a relative path from
// another working directory) would leave rank 0 committing files it cannot see. Rank 0 leaves a
// file of a fresh name there; every rank looks for it.
void check_out_is_shared(const TrainOptions& o, dist::ProcessGroup& pg) {
  namespace fs = std::filesystem;
  std::string name;
  if (pg.rank() == 0) {
    std::random_device rd;
    name = ".strider-shared-" + std::to_string(rd()) + std::to_string(rd());
    std::ofstream(fs::path(o.out_dir) / name) << name;
  }
  name = dist::all_gather_strings(pg, "strider train: the --out check's file", name)[0];
  const fs::path file = fs::path(o.out_dir) / name;
  std::string text;
  std::getline(std::ifstream(file), text);
  // "1 PATH" when this rank sees it, "0 PATH" when not; PATH: its --out made absolute.
  const std::string seen = (text == name ? "1 " : "0 ") + fs::absolute(o.out_dir).lexically_normal().string();
  const std::vector<std::string> all = dist::all_gather_strings(pg, "strider train: the --out check", seen);
  if (pg.rank() == 0) {
    std::error_code ec;
    fs::remove(file, ec);
  }
  std::string missing;
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r][0] != '1') missing += (missing.empty() ? "" : ", ") + ("rank " + std::to_string(r) + " (" + all[r].substr(2) + ")");
  STRIDER_CHECK(missing.empty(), "train", "--out ", o.out_dir, " is not one directory shared by every rank: ", missing,
                " does not see the file ", name, " that rank 0 wrote in its --out (",
                all[0].substr(2), " on rank 0); rank 0 commits each checkpoint "
                "from the files every rank writes there. Give every rank the same --out on a shared file system");
}

// The checkpoints in --out must all belong to this run: a fresh run beside another run's would
// be cleaned up by its keep-last rule and --resume would pick the other's latest; a leg resumed
// from an earlier step (a rollback) would leave the abandoned run's later checkpoints as the
// latest. `resumed_step`: -1 for a fresh run.
void check_out_holds_only_this_run(const TrainOptions& o, int64_t resumed_step) {
  std::string later;
  for (const checkpoint::CommittedCheckpoint& c : checkpoint::committed_checkpoints(o.out_dir))
    if (c.step > resumed_step) later += (later.empty() ? "" : ", ") + std::to_string(c.step);
  if (later.empty()) return;
  STRIDER_CHECK(resumed_step >= 0, "train", "--out ", o.out_dir, " already holds another run's checkpoints (steps ",
                later, "); a fresh run there would mix with them. Continue that run with --resume ", o.out_dir,
                ", or give an empty --out");
  STRIDER_CHECK(false, "train", "--out ", o.out_dir, " holds checkpoints past the resumed step ", resumed_step,
                " (steps ", later, ") from the run this leg replaces, and they would stay its latest. Move them out of ",
                o.out_dir, ", or write this leg to another --out");
}

// Removes the --out directory this run created when the run fails before it trains (a refused
// checkpoint, a check after loading): a failed start leaves no trace for the next attempt or run.
class FreshOutCleanup {
 public:
  FreshOutCleanup(std::string dir, bool created) : dir_(std::move(dir)), created_(created) {}
  ~FreshOutCleanup() {
    if (!created_ || kept_ || std::uncaught_exceptions() == 0) return;
    std::error_code ec;
    if (checkpoint::committed_checkpoints(dir_).empty()) std::filesystem::remove_all(dir_, ec);
  }
  FreshOutCleanup(const FreshOutCleanup&) = delete;
  FreshOutCleanup& operator=(const FreshOutCleanup&) = delete;
  void keep() { kept_ = true; }

 private:
  std::string dir_;
  bool created_;
  bool kept_ = false;
};

// pg: the world under --fsdp (null for --fsdp none).
int train_loop(const TrainOptions& o, std::shared_ptr<dist::ProcessGroup> pg) {
  std::error_code ec;
  const bool lead = !pg || pg->rank() == 0;
  FreshOutCleanup cleanup(o.out_dir, lead && !std::filesystem::exists(o.out_dir, ec));
  if (pg) pg->barrier();  // every rank has looked before the lead creates it
  set_up_process(o);
  if (pg && pg->size() > 1) check_out_is_shared(o, *pg);
  std::unique_ptr<TrainTask> task = make_task(o);
  std::shared_ptr<nn::Module> model = build_model(*task, o);
  const int64_t model_parameters = model->num_parameters();  // before sharding: the whole model's
  const Parallel par = make_parallel(model, o, std::move(pg));
  task->open_data(par.rank, par.world, o.batch_size / par.world, par.cast_dtype);
  std::unique_ptr<optim::Optimizer> opt = make_optimizer(o.optimizer, par.model->named_parameters(), o);
  // shard_optimizer gathers updated shards after each step; deterministic mode checks each step
  // has all its micro-batches; with --optimizer-in-backward the engine's backward steps (and
  // opt->step() in the loop applies nothing)
  if (par.engine) par.engine->register_optimizer(*opt, {.in_backward = o.optimizer_in_backward});
  const Schedule schedule = make_schedule(o, *task);
  optim::CosineWithWarmup sched(*opt, schedule.warmup_steps, schedule.total_steps);

  const std::vector<RunProperty> record = run_record(o, *task, schedule);
  // Ranks that read other data (another copy of a data set of the same size) would train one
  // model on two data sets: the record's digests of the data must agree, as the flags did.
  if (par.pg && par.world > 1) {
    std::vector<std::string> lines;
    for (const RunProperty& p : record) lines.push_back(p.key + " " + p.value);
    dist::check_same_across_ranks(*par.pg, "strider train's model, --seed and data (size and content digest)", lines);
  }
  RunState state{.position = {.epoch = 0, .batches_done = 0, .global_batch_size = o.batch_size},
                 .run_info = as_user_strings(record)};
  const checkpoint::TrainingState checkpointed{.model = par.model.get(), .optimizer = opt.get(), .scheduler = &sched,
                                               .data = &state.position, .user = &state.run_info};
  RunCheckpoints checkpoints(o, par.pg, checkpointed);
  if (!o.resume.empty()) state.global_step = resume(o, record, checkpointed, par, schedule, checkpoints.memory());
  check_out_holds_only_this_run(o, o.resume.empty() ? -1 : state.global_step);

  // After the resume: a refused checkpoint leaves the run's metrics.jsonl as it was.
  cleanup.keep();
  RunReport report(o, *task, schedule, par.lead(), par.world);
  Training t{o, *task, par, *opt, sched, schedule, state, checkpoints, report};
  report.start(model_parameters);
  const int64_t start_epoch = state.position.epoch;
  EvalResult score;
  for (int64_t epoch = start_epoch; epoch < o.epochs && state.global_step < schedule.stop_step; ++epoch) {
    const EpochCounts trained = run_epoch(t, epoch, epoch == start_epoch ? state.position.batches_done : 0);
    score = task->evaluate(*par.model, par.cast_dtype);
    report.end_of_epoch(epoch, state.global_step, trained, score, opt->lr());
    if (o.checkpoint_every == 0 && state.global_step < schedule.stop_step) checkpoints.save(state.global_step);
  }
  return finish_training(t, score);
}

}  // namespace

int run_train(const TrainOptions& o) {
  if (o.fsdp == "none") {
    const int64_t processes = launcher_process().world;
    STRIDER_CHECK(processes == 1, "train", "this process is one of ", processes, " started by mpirun or srun, but "
                  "--fsdp none trains the whole model alone in each of them, all writing to ", o.out_dir,
                  "; pass --fsdp ddp (or a sharding strategy, docs/fsdp_strategies.md) to train them as one job, or "
                  "start one process");
    return train_loop(o, nullptr);
  }
  // Checked before MPI starts, so the message is this one rather than the launcher's abort.
  const int64_t world = launcher_process().world;
  STRIDER_CHECK(o.shard_group_size == 0 || world % o.shard_group_size == 0, "train", "--shard-group-size ",
                o.shard_group_size, " does not divide the job's ", world, " ranks (mpirun -np, srun -n): hybrid "
                "sharding splits the ranks into groups of that size. Pass a divisor of ", world,
                ", or leave it out (the ranks of one host)");
  // Under MPI a failing rank ends the whole job with its message instead of hanging the others.
  std::shared_ptr<dist::ProcessGroup> pg = start_process_group(o);
  return dist::run_or_abort(*pg, [&] {
    dist::check_same_across_ranks(*pg, "strider train's flags", describe_for_ranks(o));
    return train_loop(o, pg);
  });
}

}  // namespace strider::tools
