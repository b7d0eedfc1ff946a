#include "strider/core/allocator.h"

#include <atomic>
#include <cstdlib>
#include <new>

#include "strider/core/error.h"

namespace strider {
namespace {

std::atomic<int64_t> g_current{0};
std::atomic<int64_t> g_peak{0};
std::atomic<int64_t> g_allocations{0};

class AlignedCpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    // aligned_alloc needs a size that is a multiple of the alignment; zero bytes still gets a
    // unique pointer so an empty tensor has a valid data pointer.
    size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    if (rounded == 0) rounded = kAlignment;
    void* p = std::aligned_alloc(kAlignment, rounded);
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
    std::free(ptr);
    g_current.fetch_sub(static_cast<int64_t>(nbytes));
  }
};

}  // namespace

Allocator& cpu_allocator() {
  static AlignedCpuAllocator allocator;
  return allocator;
}

MemoryStats memory_stats() {
  return {g_current.load(), g_peak.load(), g_allocations.load()};
}

void reset_peak_memory() { g_peak.store(g_current.load()); }

}  // namespace strider
