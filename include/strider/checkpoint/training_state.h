#pragma once
// What a checkpoint saves and restores. Members left null are neither saved nor loaded.
#include <map>
#include <string>

#include "strider/checkpoint/manifest.h"
#include "strider/nn/module.h"
#include "strider/optim/lr_scheduler.h"
#include "strider/optim/optimizer.h"

namespace strider::checkpoint {

struct TrainingState {
  // A plain module, a DistributedDataParallel or a FullyShardedDataParallel. Tensors are named
  // by the wrapped module's own names, so a checkpoint moves between all three, any world size
  // and any sharding strategy.
  nn::Module* model = nullptr;
  // Built on model->named_parameters(): every moment, each parameter's rows where the
  // parameter's rows are, and the step count.
  optim::Optimizer* optimizer = nullptr;
  optim::LRScheduler* scheduler = nullptr;
  DataPosition* data = nullptr;
  bool rng = true;  // each rank's default generator
  std::map<std::string, std::string>* user = nullptr;  // the caller's own strings
};

}  // namespace strider::checkpoint
