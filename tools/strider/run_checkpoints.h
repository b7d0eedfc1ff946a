#pragma once
// The run's checkpoints in --out: each holds the model, optimizer, scheduler and data position,
// counted in global batches (the same at any world size: the samplers interleave ranks), so a
// run resumes at another -np where it stopped. Blocking, or written in the background while
// the next steps run (--async-checkpoint); the last --keep-checkpoints are kept. With
// --memory-snapshot-every, also in memory (memory_snapshots.h).
#include <memory>
#include <optional>
#include <string>

#include <strider/strider.h>

#include "memory_snapshots.h"
#include "train_options.h"

namespace strider::tools {

class RunCheckpoints {
 public:
  RunCheckpoints(const TrainOptions& options, std::shared_ptr<dist::ProcessGroup> pg,
                 const checkpoint::TrainingState& state);

  // Collective: every rank, the same step.
  void save(int64_t step);
  // The in-memory snapshots (null without --memory-snapshot-every).
  RunMemorySnapshots* memory() { return memory_ ? &*memory_ : nullptr; }
  const RunMemorySnapshots* memory() const { return memory_ ? &*memory_ : nullptr; }
  int64_t last_saved_step() const { return last_saved_step_; }
  // Waits for a background save to commit; the directory of the last committed checkpoint.
  std::string wait();
  // The time training waited on background saves (--async-checkpoint only).
  std::optional<checkpoint::AsyncSaveStats> background_stats() const;

 private:
  checkpoint::TrainingState state_;
  checkpoint::Checkpointer blocking_;
  std::optional<checkpoint::AsyncCheckpointer> background_;
  std::optional<RunMemorySnapshots> memory_;
  std::string last_saved_;
  int64_t last_saved_step_ = -1;
};

}  // namespace strider::tools
