#pragma once
// `strider train`: a CNN on Fashion-MNIST (the default job) or a byte-level GPT on a text file,
// locally or data-parallel under mpirun, with progress, a per-epoch held-out score, a JSON-lines
// metrics log, an SVG plot and a resumable safetensors checkpoint.
#include "train_options.h"

namespace strider::tools {

int run_train(const TrainOptions& options);

}  // namespace strider::tools
