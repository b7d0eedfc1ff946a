#include "strider/core/allocator.h"

#include <atomic>
#include <malloc.h>

#include <cstdlib>
#include <new>

#include "strider/core/error.h"

namespace strider {
namespace {

std::atomic<int64_t> g_current{0};
std::atomic<int64_t> g_peak{0};
std::atomic<int64_t> g_allocations{0};

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

class AlignedCpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
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
    if (!p) p = std::aligned_alloc(kAlignment, rounded);
    STRIDER_CHECK(p != nullptr, "allocate", "out of memory allocating ", nbytes,
                  " bytes (", memory_stats().current_bytes, " bytes already in use)");
    int64_t now = g_current.fetch_add(static_cast<int64_t>(nbytes)) + static_cast<int64_t>(nbytes);
    int64_t peak = g_peak.load(std::memory_order_relaxed);
    while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
    }
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    return p;
  }

  void deallocate(void* ptr, size_t nbytes) override {
    if (!ptr) return;
    g_current.fetch_sub(static_cast<int64_t>(nbytes));
    size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    if (rounded == 0) rounded = kAlignment;
    if (rounded <= 4096) {
      int c = size_class(rounded);
      if (t_cache.alive && t_cache.count[c] < kMaxCached) {
        t_cache.blocks[c][t_cache.count[c]++] = ptr;
        return;
      }
    }
    std::free(ptr);
  }
};

}  // namespace

Allocator& cpu_allocator() {
  static AlignedCpuAllocator allocator = [] {
    // Activations of tens of MB are freed and reallocated every step. glibc serves blocks above
    // its mmap threshold (at most 32 MiB) with fresh mmaps, so every step would page-fault its
    // activations in again; keeping them in the heap makes reuse free.
    mallopt(M_MMAP_THRESHOLD, 512 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    return AlignedCpuAllocator();
  }();
  return allocator;
}

MemoryStats memory_stats() {
  return {g_current.load(), g_peak.load(), g_allocations.load()};
}

void reset_peak_memory() { g_peak.store(g_current.load()); }

}  // namespace strider
