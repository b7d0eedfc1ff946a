#pragma once
// One optimizer step on a global batch (this rank's share of it is `batch`). Both return the
// global batch's loss, the same on every rank.
#include <strider/strider.h>

#include "training.h"

namespace strider::tools {

double train_step(Training& t, const io::Batch& batch);

// --deterministic: the step split into micro-batches, each seeded by (--seed, step, micro-batch)
// and their losses summed exactly, so neither depends on the world size.
double deterministic_step(Training& t, const io::Batch& batch);

}  // namespace strider::tools
