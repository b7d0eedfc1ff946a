#pragma once
// DistributedDataParallel: every rank holds the whole model; gradients are averaged with
// bucketed asynchronous all-reduces that start while backward is still running (a bucket goes
// out as soon as all its gradients have accumulated). It is the NoShard plan of the FSDP engine
// with units cut by size instead of by module: one gradient reducer serves both.
#include <memory>

#include "strider/dist/process_group.h"
#include "strider/fsdp/fully_sharded_data_parallel.h"
#include "strider/nn/module.h"

namespace strider::fsdp {

struct DDPOptions {
  double bucket_cap_mb = 25.0;  // PyTorch's default
  // As FSDPOptions::deterministic and micro_batches.
  bool deterministic = false;
  int micro_batches = 0;
  // PyTorch's broadcast_buffers (default true): before a forward, rank 0's buffers (BatchNorm's
  // running statistics) are copied to every rank, so ranks evaluate the same model. Skipped, as
  // in PyTorch, for the forward after one under no_sync() or without grad mode.
  bool broadcast_buffers = true;
};

class DistributedDataParallel : public nn::Module {
 public:
  // Broadcasts rank 0's parameters and buffers, so every rank starts from the same model.
  static std::shared_ptr<DistributedDataParallel> wrap(std::shared_ptr<nn::Module> module,
                                                       std::shared_ptr<dist::ProcessGroup> pg, DDPOptions options = {});
  // The wrapped module's forward, with whatever arguments and outputs it has.
  nn::Value forward_args(const nn::Args& args) override;

  // Gradient accumulation without communication inside this scope.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallel& m) : guard_(*m.engine_) {}

   private:
    FullyShardedDataParallel::NoSyncGuard guard_;
  };
  NoSyncGuard no_sync() { return NoSyncGuard(*this); }
  int64_t num_buckets() const { return engine_->num_units() - 1; }  // the root unit owns no parameters
  // The engine underneath (stats, clip_grad_norm_, full_state_dict).
  FullyShardedDataParallel& engine() { return *engine_; }

 private:
  DistributedDataParallel(std::shared_ptr<FullyShardedDataParallel> engine, bool broadcast_buffers);
  void broadcast_buffers();
  std::shared_ptr<FullyShardedDataParallel> engine_;
  bool broadcast_buffers_;
  bool sync_buffers_next_ = true;  // PyTorch's require_forward_param_sync
};

}  // namespace strider::fsdp
