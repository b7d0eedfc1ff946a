#include "run_checkpoints.h"

namespace strider::tools {

RunCheckpoints::RunCheckpoints(const TrainOptions& o, std::shared_ptr<dist::ProcessGroup> pg,
                               const checkpoint::TrainingState& state)
    : state_(state), blocking_(o.out_dir, pg, {.keep_last = o.keep_checkpoints}) {
  if (o.async_checkpoint)
    background_.emplace(o.out_dir, pg, checkpoint::CheckpointOptions{.keep_last = o.keep_checkpoints});
  if (o.memory_snapshot_every > 0) memory_.emplace(o, pg, state);
}

void RunCheckpoints::save(int64_t step) {
  if (background_) background_->save(step, state_);
  else last_saved_ = blocking_.save(step, state_);
  last_saved_step_ = step;
}

std::string RunCheckpoints::wait() {
  if (background_) last_saved_ = background_->wait();
  return last_saved_;
}

std::optional<checkpoint::AsyncSaveStats> RunCheckpoints::background_stats() const {
  if (!background_) return std::nullopt;
  return background_->stats();
}

}  // namespace strider::tools
