#include "strider/fsdp/distributed_data_parallel.h"

#include "fsdp/structure_check.h"
#include "strider/autograd/engine.h"
#include "strider/autograd/grad_mode.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"

namespace strider::fsdp {

std::shared_ptr<DistributedDataParallel> DistributedDataParallel::wrap(std::shared_ptr<nn::Module> module,
                                                                       std::shared_ptr<dist::ProcessGroup> pg,
                                                                       DDPOptions options) {
  STRIDER_CHECK(module != nullptr && pg != nullptr, "DistributedDataParallel", "needs a module and a process group");
  return std::shared_ptr<DistributedDataParallel>(new DistributedDataParallel(std::move(module), std::move(pg), options));
}

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module,
                                                 std::shared_ptr<dist::ProcessGroup> pg, DDPOptions o)
    : nn::Module("DistributedDataParallel"), module_(module), pg_(std::move(pg)), options_(o) {
  register_wrapped_module(module);
  autograd::NoGradGuard no_grad;
  detail::check_structure_across_ranks(*pg_, "DistributedDataParallel", *module_,
                                       {"bucket_cap_mb " + std::to_string(options_.bucket_cap_mb)});
  dist::CollectiveLabel label("broadcast of rank 0's model");
  for (auto& [name, p] : module_->named_parameters()) {
    STRIDER_CHECK(p.is_non_overlapping_and_dense(), "DistributedDataParallel", "parameter '", name, "' with strides ",
                  p.strides(), " is not dense; make it contiguous (or channels-last) first");
    pg_->broadcast(p, 0);
    if (p.requires_grad()) params_.push_back(p);
  }
  for (auto& [name, b] : module_->named_buffers()) pg_->broadcast(b, 0);
  // Buckets in reverse registration order, which is roughly the order gradients become ready.
  const auto cap = static_cast<int64_t>(options_.bucket_cap_mb * 1024 * 1024);
  slot_.resize(params_.size());
  for (size_t k = params_.size(); k-- > 0;) {
    const Tensor& p = params_[k];
    const int64_t bytes = p.numel() * static_cast<int64_t>(element_size(p.dtype()));
    if (buckets_.empty() || buckets_.back().dtype != p.dtype() ||
        (buckets_.back().numel * static_cast<int64_t>(element_size(p.dtype())) + bytes > cap &&
         !buckets_.back().params.empty())) {
      buckets_.emplace_back();
      buckets_.back().dtype = p.dtype();
    }
    Bucket& b = buckets_.back();
    slot_[k] = {buckets_.size() - 1, b.params.size()};
    b.params.push_back(k);
    b.offsets.push_back(b.numel);
    b.numel += p.numel();
  }
  seen_.assign(params_.size(), 0);
  for (size_t k = 0; k < params_.size(); ++k)
    params_[k].register_post_accumulate_grad_hook([this, k](const Tensor&) { on_grad_ready(k); });
}

Tensor DistributedDataParallel::forward(const Tensor& input) {
  if (is_training()) pg_->set_step(pg_->step() + 1);  // names the step in collective messages
  return (*module_)(input);
}

void DistributedDataParallel::on_grad_ready(size_t k) {
  if (no_sync_) return;
  if (!callback_queued_) {
    callback_queued_ = true;
    autograd::queue_callback([this] { finish(); });
  }
  auto [bi, idx] = slot_[k];
  Bucket& b = buckets_[bi];
  if (!b.flat.defined()) b.flat = empty({b.numel}, b.dtype);
  const Tensor& p = params_[k];
  const Tensor& g = p.grad();
  Tensor dst = b.flat.narrow(0, b.offsets[idx], p.numel());
  // Raw memory order (the gradient has its parameter's strides), so channels-last stays.
  ops::copy_(dst, g.as_strided({p.numel()}, {1}, g.storage_offset()));
  if (!seen_[k]) {
    seen_[k] = 1;
    if (++b.ready == static_cast<int>(b.params.size())) launch(b);
  }
}

void DistributedDataParallel::launch(Bucket& b) {
  if (!b.flat.defined()) b.flat = empty({b.numel}, b.dtype);
  for (size_t i = 0; i < b.params.size(); ++i)  // parameters this backward did not reach
    if (!seen_[b.params[i]]) ops::zero_(b.flat.narrow(0, b.offsets[i], params_[b.params[i]].numel()));
  dist::CollectiveLabel label("DDP gradient bucket " + std::to_string(&b - buckets_.data()));
  b.work = pg_->all_reduce_async(b.flat, dist::ReduceOp::Avg);
}

void DistributedDataParallel::finish() {
  callback_queued_ = false;
  // Buckets launch in a fixed order on every rank: any not yet launched go now, in order.
  for (Bucket& b : buckets_)
    if (!b.work) launch(b);
  for (Bucket& b : buckets_) {
    b.work->wait();
    for (size_t i = 0; i < b.params.size(); ++i) {
      Tensor& p = params_[b.params[i]];
      p.set_grad(b.flat.as_strided(p.sizes(), p.strides(), b.offsets[i]));
    }
    b.work.reset();
    b.flat = Tensor();
    b.ready = 0;
  }
  std::fill(seen_.begin(), seen_.end(), 0);
}

}  // namespace strider::fsdp
