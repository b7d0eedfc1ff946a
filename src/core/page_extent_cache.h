#pragma once
// The compute allocator's blocks of 16 MiB and more: anonymous mappings, 2 MiB aligned, kept
// after free as page extents whose pages can serve a request of any size. A request takes the
// smallest cached extent that holds it (the rest stays cached) or, when none does, joins extents
// into one new range with mremap, which moves page tables (one entry per 2 MiB) instead of
// touching the pages: 0.07 ms for 200 MB, where faulting fresh pages in costs 80 ms. So the
// blocks one phase of a training step frees serve the next phase's blocks of other sizes (FSDP's
// gathered units, then its reduced shards), and what the process holds follows the most bytes
// alive at once rather than, for each size, the most blocks of that size alive at once. (PyTorch's
// CUDA allocator does the same with its expandable segments, on CUDA's virtual memory API.)
#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace strider::detail {

class PageExtentCache {
 public:
  static constexpr size_t kGranule = size_t{2} << 20;  // one page-table entry at the second level
  static constexpr auto kDecay = std::chrono::seconds(10);  // idle longer: back to the system
  using Clock = std::chrono::steady_clock;

  struct Taken {
    void* ptr = nullptr;        // null: the system refused the memory
    size_t fresh_bytes = 0;     // how much of the block is new memory (not cached pages)
    size_t released_bytes = 0;  // cached bytes given back to the system meanwhile
  };
  // A block of `bytes`, a multiple of kGranule.
  Taken take(size_t bytes);
  // Keeps a block from take() for reuse; returns the bytes given back to the system meanwhile
  // (idle extents, or the block itself when the cache is at its limit).
  size_t put(void* ptr, size_t bytes);
  size_t bytes();
  // Gives every cached extent back; returns their bytes.
  size_t clear();
  void set_limit(size_t bytes) { limit_ = bytes; }

 private:
  struct Extent {
    char* addr;
    size_t bytes;
    Clock::time_point freed;
  };
  // Under mu_: moves extents idle past kDecay to `out` (at most once per second).
  void sweep_locked(std::vector<Extent>& out);
  // Under mu_: removes the extent `it` points at, keeping its part past `used` bytes cached.
  Extent cut_locked(std::multimap<size_t, Extent>::iterator it, size_t used);
  static size_t unmap(const std::vector<Extent>& extents);

  std::mutex mu_;
  std::multimap<size_t, Extent> extents_;  // by size
  size_t cached_ = 0;
  size_t limit_ = size_t{8} << 30;  // beyond this, freed blocks go back to the system at once
  Clock::time_point next_sweep_{};
};

}  // namespace strider::detail
