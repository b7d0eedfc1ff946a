#pragma once
// The offload tier: memory-mapped files on local disk (ZeRO-Infinity's NVMe offload on a machine
// without an accelerator). Sharded parameters, their gradients and (through *_like) the
// optimizer state are allocated here. evict() writes pages back and drops them from this
// process's resident memory until they are touched again; it runs on the tier's own I/O thread,
// so writing overlaps computation, and prefetch_all() starts reading everything back
// asynchronously before the optimizer step needs it.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "strider/core/allocator.h"
#include "strider/core/tensor.h"

namespace strider::fsdp::detail {

class OffloadTier final : public Allocator {
 public:
  // One tier per directory for the life of the process: tensors allocated in it (shards,
  // gradients, optimizer state) may outlive the FSDP object that created them.
  static OffloadTier* open(const std::string& directory);
  void* allocate(size_t nbytes) override;
  void deallocate(void* ptr, size_t nbytes) override;
  bool propagates_to_like() const override { return true; }

  // Queue pages for write-back and release (returns at once).
  void evict(const Tensor& t);
  void evict_all();
  // Starts reading every mapping back in (returns at once).
  void prefetch_all();
  int64_t bytes() const { return bytes_; }

 private:
  explicit OffloadTier(std::string directory);
  void io_loop();
  std::string directory_;
  std::mutex mutex_;  // guards mappings_ and pending_; held while advising so no range is unmapped mid-call
  std::condition_variable cv_;
  std::unordered_map<void*, size_t> mappings_;  // address -> mapped length
  std::deque<void*> pending_;                   // mappings to page out
  void* busy_ = nullptr;                        // the mapping the I/O thread is paging out
  int64_t bytes_ = 0;
  std::thread io_;  // never joined: tiers live until the process exits
};

}  // namespace strider::fsdp::detail
