#pragma once
// The end of a training run.
#include "training.h"

namespace strider::tools {

// On every rank: the final save, --export-model, the task's closing words and (--json) the state
// digests, all collective; then on the lead rank the plot and the summary. Returns the exit code.
int finish_training(Training& t, const EvalResult& score);

}  // namespace strider::tools
