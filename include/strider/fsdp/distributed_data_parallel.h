#pragma once
// DistributedDataParallel: every rank holds the whole model; gradients are averaged with
// bucketed asynchronous all-reduces that start while backward is still running (a bucket goes
// out as soon as all its gradients have accumulated). The NO_SHARD baseline FSDP is compared
// with.
#include <memory>
#include <vector>

#include "strider/dist/process_group.h"
#include "strider/nn/module.h"

namespace strider::fsdp {

struct DDPOptions {
  double bucket_cap_mb = 25.0;  // PyTorch's default
  bool broadcast_buffers = true;
};

class DistributedDataParallel : public nn::Module {
 public:
  // Broadcasts rank 0's parameters and buffers, so every rank starts from the same model.
  static std::shared_ptr<DistributedDataParallel> wrap(std::shared_ptr<nn::Module> module,
                                                       std::shared_ptr<dist::ProcessGroup> pg, DDPOptions options = {});
  Tensor forward(const Tensor& input) override;

  // Gradient accumulation without communication inside this scope.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallel& m) : m_(m) { m_.no_sync_ = true; }
    ~NoSyncGuard() { m_.no_sync_ = false; }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    DistributedDataParallel& m_;
  };
  NoSyncGuard no_sync() { return NoSyncGuard(*this); }
  int64_t num_buckets() const { return static_cast<int64_t>(buckets_.size()); }

 private:
  struct Bucket {
    std::vector<size_t> params;  // indices into params_
    std::vector<int64_t> offsets;
    int64_t numel = 0;
    ScalarType dtype = kFloat;
    Tensor flat;
    std::shared_ptr<dist::Work> work;
    int ready = 0;
  };
  DistributedDataParallel(std::shared_ptr<nn::Module> module, std::shared_ptr<dist::ProcessGroup> pg, DDPOptions o);
  void on_grad_ready(size_t param);
  void launch(Bucket& b);
  void finish();

  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<dist::ProcessGroup> pg_;
  DDPOptions options_;
  std::vector<Tensor> params_;
  std::vector<std::pair<size_t, size_t>> slot_;  // param -> (bucket, index in bucket)
  std::vector<char> seen_;
  std::vector<Bucket> buckets_;
  bool no_sync_ = false;
  bool callback_queued_ = false;
};

}  // namespace strider::fsdp
