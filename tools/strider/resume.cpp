#include "resume.h"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>

#include "resume_check.h"

namespace strider::tools {
namespace {

bool same_directory(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

// The checkpoint directory to continue from (see resume()).
std::string resume_source(const TrainOptions& o, RunMemorySnapshots* memory, const Parallel& par) {
  bool from_memory = memory && same_directory(o.resume, o.out_dir);
  if (par.pg) dist::check_same_across_ranks(*par.pg, "whether --resume names this run's --out (for --memory-snapshot-every)",
                                            {from_memory ? "yes" : "no"});
  if (!from_memory) return checkpoint::resolve_checkpoint(o.resume);
  const auto files = checkpoint::committed_checkpoints(o.out_dir);
  const int64_t file_step = files.empty() ? -1 : files.back().step;
  std::string why;
  std::optional<checkpoint::RecoveredSnapshot> recovered;
  try {
    recovered = memory->recover(file_step, &why);
  } catch (const Error& e) {  // thrown on every rank alike: fall back to the files
    why = e.what();
  }
  if (auto& s = recovered) {
    if (par.lead())
      std::cerr << "recovered the in-memory snapshot of step " << s->step << " (taken by " << s->saved_world
                << " ranks; " << s->bytes_received << " bytes of it sent to this host)\n";
    return s->dir;
  }
  // The snapshot is gone for good (recovery dropped what was left of it): a relaunch must not
  // count on it again (strider launch then starts afresh, or from the latest checkpoint file).
  const int64_t recorded = recorded_memory_snapshot_step(o.out_dir);
  std::error_code ec;
  if (par.lead()) std::filesystem::remove(o.out_dir + "/" + kMemorySnapshotRecord, ec);
  STRIDER_CHECK(!files.empty(), "train", "nothing to resume in ", o.out_dir,
                ": it holds no committed checkpoint, and no in-memory snapshot can be used: ", why);
  if (par.lead() && recorded > file_step)
    std::cerr << "the in-memory snapshot cannot be used (" << why << "); resuming from the checkpoint of step "
              << file_step << "\n";
  return files.back().dir;
}

// A checkpoint from before the run record (or a part of it) cannot be checked for what it lacks.
void warn_unrecorded(const std::string& from, const std::vector<std::string>& unrecorded, const Parallel& par) {
  if (!par.lead() || unrecorded.empty()) return;
  std::string names;
  for (const std::string& what : unrecorded) names += (names.empty() ? "" : "; ") + what;
  std::cerr << "strider: warning: " << from << " was saved before checkpoints recorded " << names
            << ", so a change to them cannot be detected: resume with the ones it was trained with (the next "
               "checkpoints record this run's)\n";
}

}  // namespace

int64_t resume(const TrainOptions& o, const std::vector<RunProperty>& record, const checkpoint::TrainingState& state,
               const Parallel& par, const Schedule& schedule, RunMemorySnapshots* memory) {
  const auto started = std::chrono::steady_clock::now();
  const std::string from = resume_source(o, memory, par);
  const checkpoint::Manifest saved = checkpoint::read_manifest(from);
  STRIDER_CHECK(saved.data && saved.data->global_batch_size == o.batch_size, "train", from, " was saved with --batch-size ",
                saved.data ? saved.data->global_batch_size : 0, " and this run has --batch-size ", o.batch_size,
                "; its data position counts global batches, so resume with the same --batch-size");
  STRIDER_CHECK(o.reset_optimizer || saved.optimizer == state.optimizer->name(), "train", from, " holds ",
                saved.optimizer, " state but this run uses --optimizer ", state.optimizer->name(),
                "; use the same optimizer, or --reset-optimizer to start with fresh optimizer state");
  // The trainer steps its optimizer once a step (fewer after --reset-optimizer): more would be a
  // count edited by hand, and Adam's bias correction would silently follow it.
  STRIDER_CHECK(o.reset_optimizer || saved.optimizer_steps <= saved.step, "train", from, " says its optimizer took ",
                saved.optimizer_steps, " steps in a run of ", saved.step,
                " steps (manifest field optimizer.steps); the file was edited or is not this trainer's. Resume from "
                "another checkpoint, or pass --reset-optimizer to start with fresh optimizer state");
  // The schedule steps with the optimizer (--reset-optimizer sets it to the run's step): a later
  // position would be edited by hand, and the learning rate would silently follow it.
  STRIDER_CHECK(o.reset_optimizer || !saved.scheduler_step || *saved.scheduler_step <= saved.step, "train", from,
                " says its learning-rate schedule is at step ", saved.scheduler_step.value_or(0), " in a run of ",
                saved.step, " steps (manifest field scheduler.step); the file was edited or is not this trainer's. "
                "Resume from another checkpoint, or pass --reset-optimizer to restart the schedule at the run's step");
  // After --batch-size, which sets the steps per epoch too (named as the cause).
  warn_unrecorded(from, check_run_record(from, saved.user, record), par);
  checkpoint::load(from, state, par.pg.get(), {.optimizer = !o.reset_optimizer});
  // The load replaced the run info with the checkpoint's; an older one lacks properties the next
  // saves must record (the others are equal: checked above).
  for (const RunProperty& p : record) (*state.user)[p.key] = p.value;
  const checkpoint::DataPosition& position = *state.data;
  STRIDER_CHECK(position.batches_done <= schedule.steps_per_epoch, "train", from, " stopped after batch ",
                position.batches_done, " of epoch ", position.epoch + 1, " but this run's epochs have ",
                schedule.steps_per_epoch, " batches; resume with the --limit-batches it was saved with");
  const int64_t step = saved.step;
  if (o.reset_optimizer) state.scheduler->set_last_step(step);
  STRIDER_CHECK(position.epoch < o.epochs, "train", from, " was saved after epoch ", position.epoch, " and --epochs is ",
                o.epochs, ": nothing is left to train; raise --epochs to train further");
  check_resume_within_schedule(from, step, o.epochs, schedule.steps_per_epoch);
  STRIDER_CHECK(o.max_steps == 0 || step < o.max_steps, "train", from, " was saved after step ", step,
                " and --max-steps is ", o.max_steps, ": nothing is left to train; raise --max-steps");
  if (par.lead())  // stderr, with --json too: `strider launch` reads it to time a restart
    std::cerr << "resuming " << from << ": step " << step << ", epoch " << position.epoch + 1 << " batch "
              << position.batches_done + 1 << " (found and loaded in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() << " s)\n";
  return step;
}

}  // namespace strider::tools
