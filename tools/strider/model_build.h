#pragma once
// The task's model, built as the flags ask, before it is made parallel.
#include <memory>

#include <strider/strider.h>

#include "train_options.h"
#include "train_task.h"

namespace strider::tools {

// Without allocating it under --deferred-init, with --activation-checkpointing's blocks, in
// --memory-format.
std::shared_ptr<nn::Module> build_model(TrainTask& task, const TrainOptions& options);

}  // namespace strider::tools
