#pragma once
// The offload tier: memory-mapped files on local disk (ZeRO-Infinity's NVMe offload on a machine
// without an accelerator). Sharded parameters, their gradients and (through *_like) the
// optimizer state are allocated here. evict() writes pages back and drops them from this
// process's resident memory until they are touched again; it runs on the tier's own I/O thread,
// so writing overlaps computation. prefetch() starts reading one mapping back (the kernel's
// read-ahead, asynchronous), so FSDP reads the next units' state while this one computes.
// Mappings are named by their start address (a tensor's storage data), so a caller may keep
// names of mappings it does not own: a name that was freed meanwhile is ignored.
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

  // Queue pages for write-back and release (returns at once; the writer thread does it).
  void evict(const Tensor& t);
  void evict(const void* mapping);
  void evict_all();
  // Queue a mapping (or every mapping) to be read back and mapped into this process, cancelling
  // its queued eviction (returns at once; the reader thread does it). `for_write`: the caller
  // will write it (the optimizer step), so the pages are mapped writable up front; read-only
  // use maps them read-only, so they stay clean and are not written back.
  // `urgent` requests (a unit about to gather) go ahead of queued ones (state for a later step).
  void prefetch(const Tensor& t, bool for_write, bool urgent = false);
  void prefetch(const void* mapping, bool for_write, bool urgent = false);
  void prefetch_all();
  // The mapped length of `mapping` (0 when it is not one of this tier's mappings).
  int64_t mapping_bytes(const void* mapping);
  int64_t bytes() const { return bytes_; }

 private:
  struct Request {
    void* mapping;
    bool write;  // populate writable (reads) / unused (write-backs)
  };
  // One queue per direction, each with its thread, so reading ahead never waits behind a
  // write-back (and the reverse).
  struct Queue {
    std::deque<Request> pending;
    void* busy = nullptr;  // the mapping its thread is working on
    bool contains(void* p) const;
    void erase(void* p);
  };
  explicit OffloadTier(std::string directory);
  void io_loop(Queue& queue, bool write_back);
  std::string directory_;
  std::mutex mutex_;  // guards mappings_ and the queues; held while advising so no range is unmapped mid-call
  std::condition_variable cv_;
  std::unordered_map<void*, size_t> mappings_;  // address -> mapped length
  Queue reads_, writes_;
  int64_t bytes_ = 0;
  std::thread reader_, writer_;  // never joined: tiers live until the process exits
};

}  // namespace strider::fsdp::detail
