#include "strider/core/context.h"

#include <cstdlib>
#include <string>

#include "core/caching_cpu_allocator.h"
#include "strider/core/error.h"

namespace strider {
namespace {

// A switch from the environment: unset, empty or 0 is off, 1 is on, anything else an error (a
// misspelt value must not leave a check silently off).
bool env_switch(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v || std::string(v) == "0") return false;
  STRIDER_CHECK(std::string(v) == "1", name, "environment variable ", name, "='", v,
                "' is not a switch; set it to 1 (on) or 0 (off), or unset it");
  return true;
}

}  // namespace

Context& Context::process() {
  static Context* const context = new Context;  // never destroyed: see context.h
  return *context;
}

// The switches first: a bad value throws before anything is allocated.
Context::Context() {
  memory_format_check = env_switch("STRIDER_CHECK_MEMORY_FORMAT");
  kernel_verbose = env_switch("STRIDER_VERBOSE");
  kernel_autotune = env_switch("STRIDER_AUTOTUNE");
  allocator_ = new detail::CachingCpuAllocator;
}

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
