#pragma once
// The compute allocator the process's Context owns: 64-byte aligned blocks, small ones recycled
// through per-thread free lists, large ones (64 KiB and more) kept after free for reuse.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "strider/core/allocator.h"

namespace strider::detail {

// Freed large blocks by rounded size. A block not reused within kDecay goes back to the system
// (jemalloc's dirty-page decay).
struct LargeCache {
  static constexpr auto kDecay = std::chrono::seconds(10);
  using Clock = std::chrono::steady_clock;
  struct Block {
    void* ptr;
    Clock::time_point freed;
  };
  std::mutex mu;
  std::multimap<size_t, Block> blocks;
  size_t cached_bytes = 0;
  size_t limit = size_t{8} << 30;  // beyond this, freed blocks go back to the system at once
  Clock::time_point next_sweep{};

  void* take(size_t rounded, std::vector<void*>& to_free) {
    std::lock_guard<std::mutex> lock(mu);
    sweep(to_free);
    auto it = blocks.lower_bound(rounded);
    if (it == blocks.end() || it->first > rounded + rounded / 4) return nullptr;
    void* p = it->second.ptr;
    cached_bytes -= it->first;
    blocks.erase(it);
    return p;
  }
  // Returns false when the block should be freed instead.
  bool put(void* p, size_t rounded, std::vector<void*>& to_free) {
    std::lock_guard<std::mutex> lock(mu);
    sweep(to_free);
    if (cached_bytes + rounded > limit) return false;
    blocks.emplace(rounded, Block{p, Clock::now()});
    cached_bytes += rounded;
    return true;
  }
  // Moves blocks idle for longer than kDecay to `to_free` (at most once per second).
  void sweep(std::vector<void*>& to_free) {
    const auto now = Clock::now();
    if (now < next_sweep) return;
    next_sweep = now + std::chrono::seconds(1);
    for (auto it = blocks.begin(); it != blocks.end();) {
      if (now - it->second.freed < kDecay) {
        ++it;
        continue;
      }
      to_free.push_back(it->second.ptr);
      cached_bytes -= it->first;
      it = blocks.erase(it);
    }
  }
  size_t bytes() {
    std::lock_guard<std::mutex> lock(mu);
    return cached_bytes;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [size, b] : blocks) std::free(b.ptr);
    blocks.clear();
    cached_bytes = 0;
  }
};


class CachingCpuAllocator final : public Allocator {
 public:
  CachingCpuAllocator();
  void* allocate(size_t nbytes) override;
  void deallocate(void* ptr, size_t nbytes) override;
  MemoryStats stats();
  void reset_peak();
  // Returns the cached large blocks to the system.
  void release_cache();

 private:
  std::atomic<int64_t> current_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> allocations_{0};
  LargeCache large_;
};

}  // namespace strider::detail
