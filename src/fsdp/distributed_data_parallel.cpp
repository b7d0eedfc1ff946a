#include "strider/fsdp/distributed_data_parallel.h"

#include <cmath>

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
                         "micro_batches " + std::to_string(options.micro_batches)});
  return std::shared_ptr<DistributedDataParallel>(new DistributedDataParallel(std::move(engine)));
}

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<FullyShardedDataParallel> engine)
    : nn::Module("DistributedDataParallel"), engine_(std::move(engine)) {
  register_wrapped_module(engine_);
}

nn::Value DistributedDataParallel::forward_args(const nn::Args& args) { return engine_->call(args); }

}  // namespace strider::fsdp
