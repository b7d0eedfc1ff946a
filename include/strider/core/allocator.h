#pragma once
// The CPU allocator: 64-byte aligned blocks (one cache line, one AVX-512 vector) and byte
// counters that benchmarks and FSDP read to measure memory.
#include <cstddef>
#include <atomic>
#include <cstdint>

namespace strider {

struct MemoryStats {
  int64_t current_bytes = 0;   // bytes held by live storages
  int64_t peak_bytes = 0;      // highest current_bytes since start or reset_peak_memory()
  int64_t allocations = 0;     // number of allocate() calls since start
  int64_t cached_bytes = 0;    // freed large blocks kept for reuse (empty_cache() returns them)
  // Large blocks (64 KiB and up) held from the system, in use or cached (PyTorch's
  // memory_reserved), and its highest value since start or reset_peak_memory().
  int64_t reserved_bytes = 0;
  int64_t peak_reserved_bytes = 0;
};

// A block of a tier that moves its bytes out of memory while they are idle (FSDP's offload to
// disk). A storage from such a tier asks its allocator to make the block Resident before
// handing out its data pointer whenever the state is anything else: an eviction asked for but
// not started (cancelled by the access), under way (the bytes stay), or done (read back).
struct PagedBlock {
  enum State : int { Resident = 0, EvictRequested = 1, WritingBack = 2, Away = 3 };
  std::atomic<int> state{Resident};
  // The owning storage's generation (StorageImpl::generation): unchanged since the tier last
  // wrote the bytes out means there is nothing to write again.
  const std::atomic<uint64_t>* generation = nullptr;
};

class Allocator {
 public:
  static constexpr size_t kAlignment = 64;
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* ptr, size_t nbytes) = 0;
  // True for a memory tier other than compute memory (FSDP's offload files): tensors created
  // *_like one of its tensors (optimizer state) are placed in the same tier, as PyTorch places
  // them on the parameter's device.
  virtual bool propagates_to_like() const { return false; }
  // Paging tiers: the block behind `ptr` (null for memory that never leaves), asked once when a
  // storage takes it, and the call that makes it resident again (blocking).
  virtual PagedBlock* paged_block(void* /*ptr*/) { return nullptr; }
  virtual void make_resident(PagedBlock& /*block*/) {}
};

// The process's CPU allocator, Context::process().allocator() (counters are process-wide, as in
// PyTorch's CPU caching stats).
Allocator& cpu_allocator();
MemoryStats memory_stats();
// Sets peak_bytes to current_bytes, so a later read measures the peak of what follows.
void reset_peak_memory();
// Gives back what strider's caches hold (Context::release_caches): oneDNN's primitives and
// reordered weights, then the blocks the allocator keeps for reuse (freed blocks of 64 KiB
// and more), to the system. The byte counters never include cached blocks.
void empty_cache();

}  // namespace strider
