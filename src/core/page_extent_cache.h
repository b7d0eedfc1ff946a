#pragma once
// The compute allocator's blocks of 16 MiB and more: anonymous mappings, 2 MiB aligned, kept
// after free as page extents whose pages can serve a request of any size. A freed block merges
// with the cached extents next to it; a request takes the smallest cached extent that holds it
// (the rest stays cached) or, when none does, joins extents into one new range with mremap,
// which moves page tables (one entry per 2 MiB) instead of touching the pages: 0.07 ms for 200 MB,
// where faulting fresh pages in costs 80 ms. So the blocks one phase of a training step frees
// serve the next phase's blocks of other sizes (FSDP's gathered units, then its reduced shards),
// and what the process holds follows the most bytes alive at once rather than, for each size,
// the most blocks of that size alive at once. (PyTorch's CUDA allocator does the same with its
// expandable segments, on CUDA's virtual memory API.)
#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace strider::detail {

class PageExtentCache {
 public:
  static constexpr size_t kGranule = size_t{2} << 20;  // one page-table entry at the second level
  static constexpr auto kDecay = std::chrono::seconds(10);  // idle longer: back to the system
  static constexpr size_t kLimit = size_t{8} << 30;  // beyond this, freed blocks go back at once
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

 private:
  struct Extent {
    size_t bytes;
    Clock::time_point freed;  // the latest of its parts'
  };
  using Range = std::pair<char*, size_t>;
  // Under mu_: caches [addr, addr + e.bytes), merged with the cached extents it touches.
  void insert_locked(char* addr, Extent e);
  // Under mu_: removes the extent starting at `addr` (a key of by_address_) and returns it.
  Extent erase_locked(char* addr);
  // Under mu_: takes the first `used` bytes of the extent at `addr`; the rest stays cached.
  void cut_locked(char* addr, size_t used);
  // Under mu_: moves extents idle past kDecay to `out` (at most once per second).
  void sweep_locked(std::vector<Range>& out);
  static size_t unmap(const std::vector<Range>& ranges);
  // Moves the pages of [from, from + bytes) to `to` a granule at a time (an extent can span
  // several mappings, and kernels before 6.17 move only within one); returns the bytes moved.
  static size_t move(char* from, size_t bytes, char* to);

  std::mutex mu_;
  std::map<char*, Extent> by_address_;
  std::multimap<size_t, char*> by_size_;
  size_t cached_ = 0;
  Clock::time_point next_sweep_{};
};

}  // namespace strider::detail
