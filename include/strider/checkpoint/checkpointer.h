#pragma once
// Saving training state as a distributed checkpoint (PyTorch DCP's job, with resharding and
// verification built in):
//
//   checkpoint::Checkpointer ckpt("runs/gpt", pg, {.keep_last = 3});
//   checkpoint::DataPosition pos{.epoch = e, .batches_done = b, .global_batch_size = 64};
//   ckpt.save(step, {.model = model.get(), .optimizer = &opt, .scheduler = &sched, .data = &pos});
//   ...
//   checkpoint::load("runs/gpt", {.model = model.get(), .optimizer = &opt, ...}, pg.get());
//
// Each rank writes only the rows it holds of every tensor (no tensor data crosses ranks; ranks
// holding the same rows split them), into one safetensors file; rank 0 then writes the
// manifest and commits the directory by a rename (run_directory.h). Until then the previous
// checkpoint stays the latest, so a save killed at any moment, on any rank, loses only itself.
#include <cstdint>
#include <memory>
#include <string>

#include "strider/checkpoint/training_state.h"
#include "strider/dist/process_group.h"

namespace strider::checkpoint {

struct CheckpointOptions {
  int keep_last = 3;                       // committed checkpoints kept (0: all)
  uint64_t block_bytes = uint64_t{1} << 20;  // checksum granularity; loads read whole blocks
};

class Checkpointer {
 public:
  // pg null: a single process.
  Checkpointer(std::string run_dir, std::shared_ptr<dist::ProcessGroup> pg, CheckpointOptions options = {});

  // Collective (every rank, the same step). Returns the committed checkpoint's directory.
  // Throws strider::Error on every rank, naming the rank and the cause, if any rank failed;
  // the run directory's latest checkpoint is then still the previous one.
  std::string save(int64_t step, const TrainingState& state);

  const std::string& run_dir() const { return run_dir_; }

 private:
  std::string run_dir_;
  std::shared_ptr<dist::ProcessGroup> pg_;
  CheckpointOptions options_;
};

}  // namespace strider::checkpoint
