#pragma once
// Saving while training goes on. save() copies only what changes outside optimizer.step()
// (buffers, which forward updates; the RNG, scheduler and data position) and returns; a
// background thread writes each rank's file straight from the live parameters and optimizer
// moments. The next optimizer.step() waits, if it must, until that thread has read them (the
// stall), and commits the checkpoint at the first step where every rank's file is durable:
//
//   checkpoint::AsyncCheckpointer ckpt("runs/gpt", pg, {.keep_last = 3});
//   for (...) {
//     ...; opt.step();                          // waits for the writer only when it lags
//     if (step % 100 == 0) ckpt.save(step, {.model = m.get(), .optimizer = &opt, ...});
//   }
//   ckpt.wait();                                // the last save committed
//
// The extra memory is the copied buffers plus the writer's bounded file buffers, not a copy of
// the state. The optimizer's step pre-hook does the waiting and the committing, so every rank
// must step the optimizer the same number of times (as training does). Without an optimizer in
// the TrainingState, call before_update() before changing any parameter. A live tensor written
// by anything else while the writer reads it fails that save on every rank, naming the tensor;
// the previous checkpoint stays the latest.
#include <cstdint>
#include <memory>
#include <string>

#include "strider/checkpoint/checkpointer.h"

namespace strider::checkpoint {

struct AsyncSaveStats {
  int64_t saves = 0, committed = 0;
  double stall_seconds = 0;  // training blocked in save(), before_update() and wait()
  double max_stall_seconds = 0;
  uint64_t snapshot_bytes = 0;  // the largest copy a save took (the buffers)
};

class AsyncCheckpointer {
 public:
  AsyncCheckpointer(std::string run_dir, std::shared_ptr<dist::ProcessGroup> pg, CheckpointOptions options = {});
  // Joins the writer. A save not yet committed stays uncommitted (the previous checkpoint is
  // the latest; the next save in the run directory removes its files). Call wait() to keep it.
  ~AsyncCheckpointer();
  AsyncCheckpointer(const AsyncCheckpointer&) = delete;
  AsyncCheckpointer& operator=(const AsyncCheckpointer&) = delete;

  // Collective. Commits a save still in flight first (at most one is), then starts this one.
  void save(int64_t step, const TrainingState& state);
  // Collective while a save is in flight: waits until this rank's writer has read the live
  // tensors, then commits if every rank's file is complete. Runs as state.optimizer's step
  // pre-hook; call it yourself only when something else changes the parameters.
  void before_update();
  // Collective: waits for and commits the save in flight. Returns the latest committed
  // checkpoint's directory ("" if none was committed by this checkpointer). Throws like
  // Checkpointer::save if the save failed on any rank.
  std::string wait();

  const std::string& run_dir() const;
  AsyncSaveStats stats() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace strider::checkpoint
