#pragma once
// How many optimizer steps a run takes, from the flags and the task's data.
#include <cstdint>

#include "train_options.h"
#include "train_task.h"

namespace strider::tools {

struct Schedule {
  int64_t steps_per_epoch = 0;  // the task's full batches per epoch, or --limit-batches
  int64_t total_steps = 0;      // every epoch: what the learning-rate schedule spans
  int64_t stop_step = 0;        // where this process stops: total_steps, or --max-steps
  int64_t warmup_steps = 0;     // the learning rate's linear warmup
};

// Throws strider::Error when the data makes no full batch.
Schedule make_schedule(const TrainOptions& options, const TrainTask& task);

}  // namespace strider::tools
