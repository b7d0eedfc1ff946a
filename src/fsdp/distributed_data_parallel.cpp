#include "strider/fsdp/distributed_data_parallel.h"

#include <cmath>
#include <map>
#include <vector>

#include "strider/autograd/grad_mode.h"
#include "strider/ops/cat.h"
#include "strider/ops/view.h"

namespace strider::fsdp {

std::shared_ptr<DistributedDataParallel> DistributedDataParallel::wrap(std::shared_ptr<nn::Module> module,
                                                                       std::shared_ptr<dist::ProcessGroup> pg,
                                                                       DDPOptions options) {
  STRIDER_CHECK(module != nullptr && pg != nullptr, "DistributedDataParallel", "needs a module and a process group");
  STRIDER_CHECK(std::isfinite(options.bucket_cap_mb) && options.bucket_cap_mb > 0 && options.bucket_cap_mb < 1e6,
                "DistributedDataParallel", "bucket_cap_mb ", options.bucket_cap_mb,
                " is out of range; use a size in MiB such as PyTorch's default 25");
  FSDPOptions engine_options;
  engine_options.sharding_strategy = ShardingStrategy::NoShard;
  engine_options.sync_module_states = true;
  engine_options.deterministic = options.deterministic;
  engine_options.micro_batches = options.micro_batches;
  auto engine = std::shared_ptr<FullyShardedDataParallel>(
      new FullyShardedDataParallel(std::move(module), std::move(pg), std::move(engine_options)));
  engine->build_buckets(static_cast<int64_t>(options.bucket_cap_mb * 1024 * 1024),
                        {"bucket_cap_mb " + std::to_string(options.bucket_cap_mb),
                         "deterministic " + std::to_string(options.deterministic),
                         "micro_batches " + std::to_string(options.micro_batches),
                         "broadcast_buffers " + std::to_string(options.broadcast_buffers)});
  return std::shared_ptr<DistributedDataParallel>(
      new DistributedDataParallel(std::move(engine), options.broadcast_buffers));
}

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<FullyShardedDataParallel> engine,
                                                 bool broadcast_buffers)
    : nn::Module("DistributedDataParallel"), engine_(std::move(engine)), broadcast_buffers_(broadcast_buffers) {
  register_wrapped_module(engine_);
}

// One broadcast per dtype: the buffers packed back to back, sent from rank 0, copied back.
void DistributedDataParallel::broadcast_buffers() {
  std::map<ScalarType, std::vector<Tensor>> by_dtype;
  for (auto& [name, b] : engine_->module()->named_buffers()) by_dtype[b.dtype()].push_back(b);
  autograd::NoGradGuard no_grad;
  dist::CollectiveLabel label("DDP buffers");
  for (auto& [dtype, buffers] : by_dtype) {
    std::vector<Tensor> flat;
    for (const Tensor& b : buffers) flat.push_back(b.reshape({-1}));
    Tensor packed = ops::cat(flat, 0).contiguous();
    engine_->process_group().broadcast(packed, 0);
    int64_t at = 0;
    for (const Tensor& b : buffers) {
      b.copy_(packed.narrow(0, at, b.numel()).view(b.sizes()));
      at += b.numel();
    }
  }
}

nn::Value DistributedDataParallel::forward_args(const nn::Args& args) {
  if (broadcast_buffers_ && sync_buffers_next_ && engine_->process_group().size() > 1) broadcast_buffers();
  nn::Value out = engine_->call(args);
  sync_buffers_next_ = autograd::GradMode::is_enabled() && !engine_->no_sync_active();
  return out;
}

}  // namespace strider::fsdp
