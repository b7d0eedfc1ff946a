#pragma once
// --resume: continuing a run from one of its checkpoints, saved at any world size and --fsdp.
#include <cstdint>

#include <strider/strider.h>

#include "memory_snapshots.h"
#include "parallel.h"
#include "run_record.h"
#include "schedule.h"
#include "train_options.h"

namespace strider::tools {

// Checks that the checkpoint options.resume names was saved by a run this one continues (the
// same run record, run_record.h: model, --seed, data; the same --batch-size, the same optimizer
// unless --reset-optimizer, work left to do),
// loads it into state and returns the optimizer step it was saved at. With in-memory snapshots
// (`memory` not null) and --resume naming this run's --out (as strider launch passes it), the
// newest snapshot the hosts still hold is used when it is newer than the latest checkpoint file.
// A checkpoint saved before a property was recorded is resumed with a warning naming what could
// not be checked; state.user then records this run's properties for the next saves. Collective.
int64_t resume(const TrainOptions& options, const std::vector<RunProperty>& record,
               const checkpoint::TrainingState& state, const Parallel& par, const Schedule& schedule,
               RunMemorySnapshots* memory);

}  // namespace strider::tools
