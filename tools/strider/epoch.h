#pragma once
// One epoch of training.
#include <cstdint>

#include "training.h"

namespace strider::tools {

// Trains epoch from its batch first_batch until the epoch's end, the data's end or the
// schedule's stop step, advancing the run's state and saving every --checkpoint-every steps.
EpochCounts run_epoch(Training& t, int64_t epoch, int64_t first_batch);

}  // namespace strider::tools
