#pragma once
// The model as trained: plain, or wrapped for data parallelism over MPI (--fsdp).
#include <memory>

#include <strider/strider.h>

#include "train_options.h"

namespace strider::tools {

struct Parallel {
  std::shared_ptr<dist::ProcessGroup> pg;  // null for --fsdp none
  int rank = 0, world = 1;
  std::shared_ptr<nn::Module> model;
  fsdp::FullyShardedDataParallel* fsdp = nullptr;    // the FSDP front (not DDP's)
  fsdp::FullyShardedDataParallel* engine = nullptr;  // the engine under either front
  // What the loop casts parameters to for compute: --dtype, or float32 under FSDP, which casts
  // through its MixedPrecision itself.
  ScalarType cast_dtype = kFloat;

  bool lead() const { return rank == 0; }  // only rank 0 prints and writes shared files
};

// The world group for --fsdp, its collectives bounded by --collective-timeout.
std::shared_ptr<dist::ProcessGroup> start_process_group(const TrainOptions& options);

// Wraps model as --fsdp asks over pg (the group start_process_group made; null for --fsdp none)
// and materializes a --deferred-init model: afterwards each rank holds exactly what it trains.
Parallel make_parallel(std::shared_ptr<nn::Module> model, const TrainOptions& options,
                       std::shared_ptr<dist::ProcessGroup> pg);

}  // namespace strider::tools
