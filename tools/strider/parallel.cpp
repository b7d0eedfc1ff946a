#include "parallel.h"

namespace strider::tools {
namespace {

fsdp::FSDPOptions fsdp_options(const TrainOptions& o, ScalarType dtype) {
  fsdp::FSDPOptions f;
  f.sharding_strategy = fsdp::parse_sharding_strategy(o.fsdp);
  f.shard_group_size = o.shard_group_size;
  f.auto_wrap_policy = fsdp::size_based_auto_wrap_policy(o.fsdp_min_params);
  f.cpu_offload.offload_params = o.fsdp_offload;
  f.sync_module_states = true;
  f.deterministic = o.deterministic;
  if (o.deterministic) f.micro_batches = static_cast<int>(micro_batches(o));
  if (dtype == kBFloat16)
    f.mixed_precision = fsdp::MixedPrecision{.param_dtype = kBFloat16, .reduce_dtype = kFloat, .buffer_dtype = {}};
  return f;
}

}  // namespace

std::shared_ptr<dist::ProcessGroup> start_process_group(const TrainOptions& o) {
  auto ms = [](double seconds) { return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)); };
  return dist::init_process_group(nullptr, nullptr,
                                  {.timeout = ms(o.collective_timeout), .heartbeat_timeout = ms(o.heartbeat_timeout)});
}

Parallel make_parallel(std::shared_ptr<nn::Module> model, const TrainOptions& o,
                       std::shared_ptr<dist::ProcessGroup> pg) {
  const ScalarType dtype = scalar_type_from_string(o.dtype);
  Parallel p;
  p.model = model;
  p.cast_dtype = dtype;
  if (o.fsdp == "none") {
    if (o.deferred_init) nn::materialize(*model);
    return p;
  }
  STRIDER_CHECK(pg != nullptr, "train", "--fsdp ", o.fsdp, " needs the process group start_process_group made");
  p.pg = std::move(pg);
  p.rank = p.pg->rank();
  p.world = p.pg->size();
  STRIDER_CHECK(o.batch_size % p.world == 0, "train", "--batch-size ", o.batch_size, " does not split evenly over ",
                p.world, " ranks");
  if (o.fsdp == "ddp") {
    auto ddp = fsdp::DistributedDataParallel::wrap(
        model, p.pg,
        {.deterministic = o.deterministic, .micro_batches = o.deterministic ? static_cast<int>(micro_batches(o)) : 0});
    p.engine = &ddp->engine();
    p.model = ddp;
    return p;
  }
  auto wrapped = fsdp::FullyShardedDataParallel::wrap(model, p.pg, fsdp_options(o, dtype));
  p.fsdp = p.engine = wrapped.get();
  p.model = wrapped;
  p.cast_dtype = kFloat;
  return p;
}

}  // namespace strider::tools
