#include "strider/checkpoint/checkpointer.h"

#include "checkpoint/save_plan.h"

namespace strider::checkpoint {

Checkpointer::Checkpointer(std::string run_dir, std::shared_ptr<dist::ProcessGroup> pg, CheckpointOptions options)
    : run_dir_(std::move(run_dir)), pg_(std::move(pg)), options_(options) {
  detail::validate_options(run_dir_, options_, "Checkpointer");
}

std::string Checkpointer::save(int64_t step, const TrainingState& state) {
  detail::check_save_request(step, state, pg_.get());
  const int rank = pg_ ? pg_->rank() : 0, world = pg_ ? pg_->size() : 1;
  const detail::SavePlan plan = detail::plan_save(run_dir_, step, state, rank, world, false);
  return detail::commit_save(plan, pg_.get(), detail::write_rank_file(plan, options_.block_bytes), options_.keep_last);
}

}  // namespace strider::checkpoint
