#include "strider/core/context.h"

#include "core/caching_cpu_allocator.h"

namespace strider {

Context& Context::process() {
  static Context* const context = new Context;  // never destroyed: see context.h
  return *context;
}

Context::Context() : allocator_(new detail::CachingCpuAllocator) {}

Allocator& Context::allocator() { return *allocator_; }

MemoryStats Context::memory_stats() const { return static_cast<detail::CachingCpuAllocator*>(allocator_)->stats(); }

void Context::reset_peak_memory() { static_cast<detail::CachingCpuAllocator*>(allocator_)->reset_peak(); }

void* Context::find_or_add(const void* key, const std::function<Slot()>& make) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(key);
  if (it == slots_.end()) {
    it = slots_.emplace(key, make()).first;
    order_.push_back(key);
  }
  return it->second.object.get();
}

void Context::release_caches() {
  std::vector<std::function<void()>> releases;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = order_.rbegin(); it != order_.rend(); ++it)
      if (const auto& r = slots_.at(*it).release) releases.push_back(r);
  }
  // Outside the lock: a release may free tensors, and nothing here needs the slot table.
  for (const auto& release : releases) release();
  static_cast<detail::CachingCpuAllocator*>(allocator_)->release_cache();
}

Context::ThreadState& Context::this_thread() {
  thread_local ThreadState state;
  return state;
}

}  // namespace strider
