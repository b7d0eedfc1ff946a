#include "resume_check.h"

#include <strider/core/error.h>

namespace strider::tools {

void check_resume_within_schedule(const std::string& checkpoint, int64_t step, int64_t epochs,
                                  int64_t steps_per_epoch) {
  const int64_t total = epochs * steps_per_epoch;  // the trainer checked both are positive
  if (step < total) return;
  const int64_t epochs_needed = step / steps_per_epoch + 1;  // the fewest whose schedule ends after `step`
  const std::string per_epoch = std::to_string(steps_per_epoch) + (steps_per_epoch == 1 ? " step" : " steps");
  STRIDER_CHECK(false, "train", checkpoint, " is already ", step == total ? "at" : "past",
                " the end of this run's schedule (step ", step, " of ", total, "), which is --epochs ", epochs, " of ",
                per_epoch, " each: nothing is left to train. To train further, raise --epochs (to ", epochs_needed, " or more at ",
                per_epoch, " each; the steps per epoch, --limit-batches, must stay those it was saved with)");
}

}  // namespace strider::tools
