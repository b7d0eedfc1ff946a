#include "schedule.h"

#include <algorithm>

namespace strider::tools {

Schedule make_schedule(const TrainOptions& o, const TrainTask& task) {
  Schedule s;
  const int64_t batches = task.batches_per_epoch();
  s.steps_per_epoch = o.limit_batches > 0 ? std::min(o.limit_batches, batches) : batches;
  STRIDER_CHECK(s.steps_per_epoch > 0, "train", "the training data makes no full batch of ", o.batch_size,
                "; lower --batch-size");
  s.total_steps = s.steps_per_epoch * o.epochs;
  s.stop_step = o.max_steps > 0 ? std::min(o.max_steps, s.total_steps) : s.total_steps;
  s.warmup_steps = std::min<int64_t>(s.steps_per_epoch / 2, 200);
  return s;
}

}  // namespace strider::tools
