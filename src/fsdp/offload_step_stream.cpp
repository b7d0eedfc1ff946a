#include "fsdp/offload_step_stream.h"

#include <algorithm>

#include "fsdp/offload_tier.h"

namespace strider::fsdp::detail {

std::vector<const void*> OffloadStepStream::blocks_of(const optim::Optimizer& opt, size_t index) const {
  const auto& [name, p] = opt.params()[index];
  std::vector<const void*> out;
  if (p.storage()) out.push_back(p.storage()->address());
  auto st = opt.state().find(name);
  if (st != opt.state().end())
    for (auto& [key, t] : st->second)
      if (t.defined() && t.storage()) out.push_back(t.storage()->address());
  return out;
}

void OffloadStepStream::read_ahead(const optim::Optimizer& opt, size_t from) {
  read_until_ = std::max(read_until_, from);
  int64_t bytes = 0;
  for (size_t j = from; j < read_until_; ++j)
    for (const void* m : blocks_of(opt, j)) bytes += tier_.block_bytes(m);
  while (read_until_ < opt.params().size() && bytes < budget_) {
    for (const void* m : blocks_of(opt, read_until_)) {
      if (m == last_read_) continue;
      tier_.prefetch(m);
      bytes += tier_.block_bytes(m);
      last_read_ = m;
    }
    ++read_until_;
  }
}

void OffloadStepStream::begin_step() {
  read_until_ = 0;
  last_read_ = nullptr;
  order_.clear();
}

void OffloadStepStream::before(const optim::Optimizer& opt, size_t index) {
  read_ahead(opt, index);
}

void OffloadStepStream::after(const optim::Optimizer& opt, size_t index) {
  // Looked up again: the moments are created at a parameter's first step.
  const std::vector<const void*> mine = blocks_of(opt, index);
  const void* shard = mine.empty() ? nullptr : mine.front();
  const void* next_shard = nullptr;
  if (index + 1 < opt.params().size()) {
    const Tensor& next = opt.params()[index + 1].second;
    if (next.storage()) next_shard = next.storage()->address();
  }
  for (size_t k = 1; k < mine.size(); ++k) tier_.evict(mine[k]);  // the moments: done for this step
  if (shard && shard != next_shard) tier_.evict(shard);        // the unit's last parameter stepped
  order_.insert(order_.end(), mine.begin(), mine.end());
  streamed_ = true;
}

void OffloadStepStream::end_step() {
  // Keep each block once, in first-use order.
  recorded_.clear();
  for (const void* m : order_)
    if (std::find(recorded_.begin(), recorded_.end(), m) == recorded_.end()) recorded_.push_back(m);
  order_.clear();
}

void OffloadStepStream::read_ahead_first() {
  int64_t bytes = 0;
  const void* last = nullptr;
  for (const void* m : recorded_) {
    if (bytes >= budget_) break;
    if (m == last) continue;
    tier_.prefetch(m);
    bytes += tier_.block_bytes(m);
    last = m;
  }
}

bool OffloadStepStream::take_streamed() {
  const bool s = streamed_;
  streamed_ = false;
  return s;
}

}  // namespace strider::fsdp::detail
