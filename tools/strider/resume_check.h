#pragma once
// Checks on a checkpoint `strider train --resume` is about to continue, kept out of the
// training loop so the loop reads as training.
#include <cstdint>
#include <string>

namespace strider::tools {

// A run resumed at or past the end of its schedule would train nothing and still report
// success. Throws strider::Error naming the checkpoint, its step, the schedule's last step
// (epochs x steps_per_epoch) and how to extend it (--epochs). A checkpoint with the run record
// (run_record.h) has the run's steps per epoch, so this guards the ones saved before it.
void check_resume_within_schedule(const std::string& checkpoint, int64_t step, int64_t epochs, int64_t steps_per_epoch);

}  // namespace strider::tools
