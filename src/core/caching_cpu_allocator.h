#pragma once
// The compute allocator the process's Context owns: 64-byte aligned blocks, small ones recycled
// through per-thread free lists, large ones (64 KiB and more) kept after free for reuse, those of
// 16 MiB and more as page extents (page_extent_cache.h).
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "core/page_extent_cache.h"
#include "strider/core/allocator.h"

namespace strider::detail {

// Freed blocks of 64 KiB and more that round to less than 16 MiB, by rounded size (larger ones
// are page extents, cached apart, under a limit of their own). A block not reused within kDecay goes back to the system
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

  // A cached block of at least `rounded` bytes (its key in *key), or null.
  void* take(size_t rounded, std::vector<std::pair<void*, size_t>>& to_free, size_t* key) {
    std::lock_guard<std::mutex> lock(mu);
    sweep(to_free);
    auto it = blocks.lower_bound(rounded);
    if (it == blocks.end() || it->first > rounded + rounded / 4) return nullptr;
    void* p = it->second.ptr;
    *key = it->first;
    cached_bytes -= it->first;
    blocks.erase(it);
    return p;
  }
  // Returns false when the block should be freed instead.
  bool put(void* p, size_t rounded, std::vector<std::pair<void*, size_t>>& to_free) {
    std::lock_guard<std::mutex> lock(mu);
    sweep(to_free);
    if (cached_bytes + rounded > limit) return false;
    blocks.emplace(rounded, Block{p, Clock::now()});
    cached_bytes += rounded;
    return true;
  }
  // Moves blocks idle for longer than kDecay to `to_free` with their keys (at most once per second).
  void sweep(std::vector<std::pair<void*, size_t>>& to_free) {
    const auto now = Clock::now();
    if (now < next_sweep) return;
    next_sweep = now + std::chrono::seconds(1);
    for (auto it = blocks.begin(); it != blocks.end();) {
      if (now - it->second.freed < kDecay) {
        ++it;
        continue;
      }
      to_free.emplace_back(it->second.ptr, it->first);
      cached_bytes -= it->first;
      it = blocks.erase(it);
    }
  }
  size_t bytes() {
    std::lock_guard<std::mutex> lock(mu);
    return cached_bytes;
  }
  // Frees every cached block; returns their bytes.
  size_t clear() {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [size, b] : blocks) std::free(b.ptr);
    blocks.clear();
    const size_t freed = cached_bytes;
    cached_bytes = 0;
    return freed;
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
  // Large blocks held from the system, in use or cached (a reused block counts as the size it
  // was taken for: its up to 25% slack is not counted).
  void add_reserved(int64_t bytes);
  void free_large(const std::vector<std::pair<void*, size_t>>& blocks);

  std::atomic<int64_t> current_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> reserved_{0};
  std::atomic<int64_t> peak_reserved_{0};
  std::atomic<int64_t> allocations_{0};
  LargeCache large_;
  PageExtentCache extents_;
};

}  // namespace strider::detail
