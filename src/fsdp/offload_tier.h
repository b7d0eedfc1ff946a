#pragma once
// The offload tier: FSDP's sharded parameters, their optimizer state (through *_like) and the
// like live in anonymous memory (huge pages for large blocks) that is moved to one file on local
// disk while idle (ZeRO-Infinity's NVMe offload on a machine without an accelerator). Each block
// is a PagedBlock: evict() queues it for the writer thread, which writes it with O_DIRECT (only if
// its storage's generation changed since its last write) and then releases its memory, leaving
// an inaccessible reservation at the same address; prefetch() queues it for the reader thread,
// which reads it into fresh pages and moves them into place. A storage whose block is away asks
// for it back before handing out its data pointer (StorageImpl::data), so every access sees the
// bytes; eviction is requested by FSDP after a block's use, and for a unit's shards right after
// they are built (so a model larger than RAM can be built).
//
// evict() marks a block; any access before the writer starts cancels that, and one while it
// writes keeps the block: so eviction is asked for when a use ends, and never while a pointer
// into the block is still in use (FSDP: after a unit's gather completes, after a parameter's
// optimizer update).
//
// Whole blocks move by explicit reads and writes, not through the page cache: the kernel's work
// per 4 KiB page of a shared file mapping (faults, dirty tracking, reclaim) cost more CPU than
// the copy itself (docs/benchmarks.md, "Offload that keeps up"). For the same reason the pages
// of a block written out are kept as spares (up to a limit) and the next read goes into them:
// fresh pages are zeroed by the kernel first, which took 15% of all CPU samples of a step.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
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
  PagedBlock* paged_block(void* ptr) override;
  void make_resident(PagedBlock& block) override;

  // Queue a block (named by its address, a storage's StorageImpl::address) to be written out
  // and released; returns at once unless more than the write-behind bound (limit_write_behind)
  // is then queued, and waits for the writer until it is not. Names that are not blocks of this
  // tier are ignored. evict_all queues every block and returns at once (they hold their memory
  // already; the next evict waits for the bound).
  void evict(const Tensor& t);
  void evict(const void* address);
  void evict_all();
  // Blocks until every eviction queued so far is written out (or cancelled by an access): a
  // producer of more bytes than RAM holds (FSDP building an offloaded model unit by unit) waits
  // here before queuing more.
  void wait_for_writes();
  // Queue a block (or every block) to be read back ahead of use, cancelling a queued eviction
  // (returns at once). `urgent` requests go ahead of queued ones.
  void prefetch(const Tensor& t, bool urgent = false);
  void prefetch(const void* address, bool urgent = false);
  void prefetch_all();
  // Bytes of released pages kept for later reads (the largest limit asked for wins; 0: none).
  void keep_spare_pages(int64_t bytes);
  // The most bytes of evicted blocks left waiting for the writer: an eviction past it waits for
  // the disk, so memory stays bounded when the disk is slower than the step (the largest limit
  // asked for wins; 0: every eviction waits for its write). Until asked: no bound.
  void limit_write_behind(int64_t bytes);
  // Seconds evictions waited for the writer under that bound; the highest backlog since the
  // last reset_peak_held().
  double write_wait_seconds() const;
  int64_t write_backlog_bytes();  // evicted bytes now waiting for (or in) the writer
  int64_t peak_write_backlog_bytes() const { return peak_backlog_.load(); }
  int64_t spare_bytes();
  // The length of the block at `address` (0 when it is not one).
  int64_t block_bytes(const void* address);
  int64_t bytes() const { return bytes_; }  // of live blocks
  // Memory the tier holds: its blocks' pages while they are not away (resident, or queued to go)
  // and the spare pages; the highest since the last reset_peak_held(). A block being read back
  // counts once its pages are in place (up to one block per reader short while it is read).
  int64_t held_bytes() const { return held_.load(); }
  int64_t peak_held_bytes() const { return peak_held_.load(); }
  void reset_peak_held();

 private:
  struct Block : PagedBlock {
    void* address = nullptr;
    size_t length = 0;      // page-rounded
    int64_t offset = 0;     // in the tier's file
    int io = 0;             // worker threads holding it: reader and writer may both (guarded by the tier's mutex)
    std::mutex mutex;       // state transitions
    std::condition_variable paged_in;
    bool reading = false;   // a page-in is under way (guarded by mutex)
    bool written = false;   // the file holds a copy, of generation written_generation
    uint64_t written_generation = 0;
    bool in_backlog = false;  // its bytes count in backlog_ (guarded by the tier's mutex)
  };
  struct Queue {
    std::deque<void*> pending;
    void erase(void* address);
    bool contains(void* address) const;
  };

  explicit OffloadTier(std::string directory);
  // Populated pages of `length` bytes from the spares (2 MiB aligned when that long), or null.
  void* take_spare(size_t length);
  // Moves b's pages to the spares and leaves an inaccessible reservation at b.address;
  // false (nothing changed) when the spares are full or the kernel cannot move them.
  bool keep_pages(Block& b);
  void release_spares();
  void add_held(int64_t bytes);
  void io_loop(Queue& queue, bool write_out);
  void request_eviction(Block& b);  // Resident -> EvictRequested
  // The backlog: blocks queued (or being written) that hold memory. Under the tier's mutex.
  void enter_backlog(Block& b);
  void leave_backlog(Block& b);
  void wait_for_backlog(std::unique_lock<std::mutex>& lock);
  void cancel_eviction(Block& b);   // EvictRequested -> Resident
  void page_in(Block& b);     // Away -> Resident; the caller set b.reading
  void write_out(Block& b);   // Resident -> Away, unless touched meanwhile

  std::string directory_;
  int fd_ = -1;               // one file for every block; O_DIRECT where the filesystem allows
  int64_t file_end_ = 0;      // offsets are not reused: freed ranges are punched out
  std::mutex mutex_;          // blocks_, the queues and every Block::io
  std::condition_variable cv_;
  std::unordered_map<void*, std::unique_ptr<Block>> blocks_;
  Queue reads_, writes_;
  int64_t backlog_ = 0;        // bytes of blocks in_backlog (guarded by mutex_)
  int64_t backlog_limit_ = -1; // -1: none
  // The block the (one) writer has taken off writes_ and not finished, or null (guarded by mutex_).
  const Block* writing_block_ = nullptr;
  std::atomic<int64_t> write_wait_ns_{0}, peak_backlog_{0};
  int64_t bytes_ = 0;
  std::atomic<int64_t> held_{0}, peak_held_{0};
  std::mutex spare_mutex_;
  std::multimap<size_t, void*> spares_;  // by length
  int64_t spare_bytes_ = 0, spare_limit_ = 0;
  std::thread reader_, writer_;  // never joined: tiers live until the process exits
};

}  // namespace strider::fsdp::detail
