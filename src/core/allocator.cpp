#include "core/caching_cpu_allocator.h"

#include <malloc.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "strider/core/context.h"
#include "strider/core/error.h"

namespace strider {
namespace {

// Blocks up to 4 KiB are recycled through per-thread free lists, one per power-of-two size
// class: aligned_alloc is slow for small sizes, and small tensors (scalars, biases, loss values)
// are created and dropped at a high rate in every training step.
constexpr int kNumClasses = 7;  // 64, 128, ..., 4096 bytes
constexpr int kMaxCached = 64;  // per class and thread

int size_class(size_t rounded) {
  int c = 0;
  size_t s = 64;
  while (s < rounded) {
    s <<= 1;
    ++c;
  }
  return c;
}

struct BlockCache {
  void* blocks[kNumClasses][kMaxCached];
  int count[kNumClasses] = {};
  bool alive = true;  // false once this thread's cache is torn down (static tensors die later)
  ~BlockCache() {
    for (int c = 0; c < kNumClasses; ++c) {
      for (int i = 0; i < count[c]; ++i) std::free(blocks[c][i]);
      count[c] = 0;
    }
    alive = false;
  }
};

thread_local BlockCache t_cache;

// Blocks of 64 KiB and more are kept after free and handed out again. glibc serves blocks of
// 1 MiB and more with fresh mmaps, and trims freed memory off the top of its heap once 128 KiB
// are free there, so without this every step page-faults (and zeroes) its activations again: a
// third of a ResNet-50 training step at batch 16, half of an inference step at batch 1 (whose
// activations are 200-800 KiB). Sizes round up to 16 KiB below 1 MiB, 256 KiB below 16 MiB and
// 2 MiB beyond; below 16 MiB a request reuses a cached block up to 25% larger, from 16 MiB on
// it takes pages of any cached blocks (PageExtentCache). A block not reused within
// LargeCache::kDecay goes back to the system (jemalloc's dirty-page decay), so a training loop
// keeps its working set cached while sizes it stopped using (a model's weights before sharding,
// a finished evaluation's activations) stop counting against resident memory.
constexpr size_t kCachedBlock = size_t{64} << 10;
constexpr size_t kMmapThreshold = size_t{1} << 20;
// From here blocks are page extents (PageExtentCache): their pages serve requests of any size.
constexpr size_t kExtentBlock = size_t{16} << 20;

size_t large_rounded(size_t nbytes) {
  const size_t granule = nbytes >= (size_t{16} << 20) ? size_t{2} << 20
                         : nbytes >= kMmapThreshold   ? size_t{256} << 10
                                                      : size_t{16} << 10;
  return (nbytes + granule - 1) / granule * granule;
}

}  // namespace

void* detail::CachingCpuAllocator::allocate(size_t nbytes) {
  // (Past 2^62 bytes the roundings below would wrap around.)
  STRIDER_CHECK(nbytes <= (size_t{1} << 62), "allocate", "out of memory allocating ", nbytes,
                " bytes: more than any machine can map");
  // aligned_alloc needs a size that is a multiple of the alignment; zero bytes still gets a
  // unique pointer so an empty tensor has a valid data pointer.
  size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  void* p = nullptr;
  if (rounded <= 4096) {
    int c = size_class(rounded);
    rounded = size_t{64} << c;
    if (t_cache.alive && t_cache.count[c] > 0) p = t_cache.blocks[c][--t_cache.count[c]];
  }
  const bool large = rounded >= kCachedBlock;
  if (large && large_rounded(rounded) >= kExtentBlock) {
    rounded = large_rounded(rounded);
    const PageExtentCache::Taken t = extents_.take(rounded);
    add_reserved(static_cast<int64_t>(t.fresh_bytes) - static_cast<int64_t>(t.released_bytes));
    p = t.ptr;
  } else if (large) {
    rounded = large_rounded(rounded);
    std::vector<std::pair<void*, size_t>> to_free;
    size_t key = 0;
    p = large_.take(rounded, to_free, &key);
    free_large(to_free);
    // A reused block may be up to 25% larger than asked for; it returns to the cache under
    // the smaller size, which stays safe (capacity >= key) and only forgoes the slack.
    if (p) add_reserved(-static_cast<int64_t>(key - rounded));
  }
  if (!p && rounded < kExtentBlock) {
    p = std::aligned_alloc(kAlignment, rounded);
    if (p && large) add_reserved(static_cast<int64_t>(rounded));
  }
  STRIDER_CHECK(p != nullptr, "allocate", "out of memory allocating ", nbytes,
                " bytes (", current_.load(), " bytes already in use)");
  int64_t now = current_.fetch_add(static_cast<int64_t>(nbytes)) + static_cast<int64_t>(nbytes);
  int64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  allocations_.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void detail::CachingCpuAllocator::deallocate(void* ptr, size_t nbytes) {
  if (!ptr) return;
  current_.fetch_sub(static_cast<int64_t>(nbytes));
  size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  if (rounded >= kCachedBlock && large_rounded(rounded) >= kExtentBlock) {
    reserved_.fetch_sub(static_cast<int64_t>(extents_.put(ptr, large_rounded(rounded))));
    return;
  }
  if (rounded >= kCachedBlock) {
    std::vector<std::pair<void*, size_t>> to_free;
    const size_t key = large_rounded(rounded);
    if (!large_.put(ptr, key, to_free)) to_free.emplace_back(ptr, key);
    free_large(to_free);
    return;
  }
  if (rounded <= 4096) {
    int c = size_class(rounded);
    if (t_cache.alive && t_cache.count[c] < kMaxCached) {
      t_cache.blocks[c][t_cache.count[c]++] = ptr;
      return;
    }
  }
  std::free(ptr);
}

detail::CachingCpuAllocator::CachingCpuAllocator() {
  // A fixed threshold: glibc otherwise raises it after each large free, and blocks below it
  // come from the heap, where freeing them rarely returns memory to the system.
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMmapThreshold));
}

void detail::CachingCpuAllocator::add_reserved(int64_t bytes) {
  const int64_t now = reserved_.fetch_add(bytes) + bytes;
  int64_t peak = peak_reserved_.load(std::memory_order_relaxed);
  while (now > peak && !peak_reserved_.compare_exchange_weak(peak, now)) {
  }
}

void detail::CachingCpuAllocator::free_large(const std::vector<std::pair<void*, size_t>>& blocks) {
  for (const auto& [q, key] : blocks) {
    std::free(q);
    reserved_.fetch_sub(static_cast<int64_t>(key));
  }
}

MemoryStats detail::CachingCpuAllocator::stats() {
  return {current_.load(), peak_.load(), allocations_.load(), static_cast<int64_t>(large_.bytes() + extents_.bytes()),
          reserved_.load(), peak_reserved_.load()};
}

void detail::CachingCpuAllocator::reset_peak() {
  peak_.store(current_.load());
  peak_reserved_.store(reserved_.load());
}

void detail::CachingCpuAllocator::release_cache() {
  reserved_.fetch_sub(static_cast<int64_t>(large_.clear() + extents_.clear()));
}

Allocator& cpu_allocator() { return Context::process().allocator(); }
MemoryStats memory_stats() { return Context::process().memory_stats(); }
void reset_peak_memory() { Context::process().reset_peak_memory(); }
void empty_cache() { Context::process().release_caches(); }

}  // namespace strider
