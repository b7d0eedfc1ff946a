#include "fsdp/offload_tier.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

#include "core/page_moves.h"
#include "fsdp/pages.h"
#include "strider/core/context.h"
#include "strider/core/error.h"

namespace strider::fsdp::detail {
namespace {

// One tier per directory for the process (a slot of its Context).
struct OffloadTiers {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<OffloadTier>> by_directory;
};

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kIoChunk = size_t{64} << 20;  // one read or write call moves at most this

// Anonymous memory of `length` bytes, 2 MiB aligned when it is at least that long (so the
// kernel can back it with huge pages); `protection` PROT_NONE reserves the range only. Null
// when the kernel refuses.
void* try_map_anonymous(size_t length, int protection) {
  const bool huge = length >= kHugePage;
  return strider::detail::map_aligned_pages(length, huge ? kHugePage : 1, protection, MAP_NORESERVE, huge);
}

void* map_anonymous(size_t length, int protection, const char* what) {
  void* p = try_map_anonymous(length, protection);
  STRIDER_CHECK(p != nullptr, "CPUOffload", "cannot map ", length, " bytes for ", what, ": ", std::strerror(errno));
  return p;
}

// Moves `length` bytes between memory and the file at `offset`, in chunks, retrying short
// transfers. Returns the errno of a failure (0 on success).
template <class Io>
int transfer(Io io, int fd, char* memory, size_t length, int64_t offset) {
  size_t done = 0;
  while (done < length) {
    const size_t n = std::min(kIoChunk, length - done);
    const ssize_t k = io(fd, memory + done, n, static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return k < 0 ? errno : EIO;
    done += static_cast<size_t>(k);
  }
  return 0;
}

}  // namespace

OffloadTier* OffloadTier::open(const std::string& directory) {
  OffloadTiers& tiers = Context::process().slot<OffloadTiers>();
  std::lock_guard lock(tiers.mutex);
  auto& t = tiers.by_directory[directory];
  if (!t) t.reset(new OffloadTier(directory));
  return t.get();
}

OffloadTier::OffloadTier(std::string directory) : directory_(std::move(directory)) {
  std::string path = directory_ + "/strider-offload-XXXXXX";
  fd_ = mkstemp(path.data());
  STRIDER_CHECK(fd_ >= 0, "CPUOffload", "cannot create an offload file in '", directory_, "': ", std::strerror(errno),
                "; set CPUOffload::directory to a writable local directory");
  unlink(path.c_str());  // the descriptor keeps the file; nothing is left behind on exit
  // Past the page cache where the filesystem allows it (tmpfs does not: then buffered).
  const int flags = fcntl(fd_, F_GETFL);
  if (flags >= 0) fcntl(fd_, F_SETFL, flags | O_DIRECT);
  reader_ = std::thread([this] { io_loop(reads_, false); });
  writer_ = std::thread([this] { io_loop(writes_, true); });
  reader_.detach();
  writer_.detach();
}

void* OffloadTier::allocate(size_t nbytes) {
  auto b = std::make_unique<Block>();
  b->length = page_round(nbytes);
  b->address = map_anonymous(b->length, PROT_READ | PROT_WRITE, "offloaded state");
  std::lock_guard lock(mutex_);
  b->offset = file_end_;
  file_end_ += static_cast<int64_t>(b->length >= kHugePage ? (b->length + kHugePage - 1) / kHugePage * kHugePage
                                                           : b->length);
  bytes_ += static_cast<int64_t>(b->length);
  add_held(static_cast<int64_t>(b->length));
  void* p = b->address;
  blocks_[p] = std::move(b);
  return p;
}

void OffloadTier::deallocate(void* ptr, size_t) {
  if (!ptr) return;
  std::unique_ptr<Block> b;
  bool last = false;
  {
    std::unique_lock lock(mutex_);
    auto it = blocks_.find(ptr);
    if (it == blocks_.end()) return;
    // Never unmap what a worker is moving (looked up again after waiting: an allocation on
    // another thread may have rehashed the map).
    cv_.wait(lock, [&] { return blocks_.at(ptr)->io == 0; });
    it = blocks_.find(ptr);
    reads_.erase(ptr);
    writes_.erase(ptr);
    leave_backlog(*it->second);
    cv_.notify_all();  // wait_for_writes: that may have been the last pending write
    b = std::move(it->second);
    blocks_.erase(it);
    bytes_ -= static_cast<int64_t>(b->length);
    if (b->state.load() != PagedBlock::Away) add_held(-static_cast<int64_t>(b->length));
    last = blocks_.empty();
  }
  munmap(b->address, b->length);
  fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, b->offset, static_cast<off_t>(b->length));
  if (last) release_spares();  // nothing left to read back into
}

void OffloadTier::release_spares() {
  std::lock_guard lock(spare_mutex_);
  for (auto& [length, p] : spares_) munmap(p, length);
  spares_.clear();
  add_held(-spare_bytes_);
  spare_bytes_ = 0;
}

void OffloadTier::add_held(int64_t bytes) {
  const int64_t now = held_.fetch_add(bytes) + bytes;
  int64_t peak = peak_held_.load(std::memory_order_relaxed);
  while (now > peak && !peak_held_.compare_exchange_weak(peak, now)) {
  }
}

PagedBlock* OffloadTier::paged_block(void* ptr) {
  std::lock_guard lock(mutex_);
  auto it = blocks_.find(ptr);
  return it == blocks_.end() ? nullptr : it->second.get();
}

void OffloadTier::keep_spare_pages(int64_t bytes) {
  std::lock_guard lock(spare_mutex_);
  spare_limit_ = std::max(spare_limit_, bytes);
}

int64_t OffloadTier::spare_bytes() {
  std::lock_guard lock(spare_mutex_);
  return spare_bytes_;
}

void* OffloadTier::take_spare(size_t length) {
  std::lock_guard lock(spare_mutex_);
  auto it = spares_.find(length);
  if (it == spares_.end()) return nullptr;
  void* p = it->second;
  spares_.erase(it);
  spare_bytes_ -= static_cast<int64_t>(length);
  add_held(-static_cast<int64_t>(length));  // counted again as the block's once read into
  return p;
}

bool OffloadTier::keep_pages(Block& b) {
  {
    std::lock_guard lock(spare_mutex_);
    if (spare_bytes_ + static_cast<int64_t>(b.length) > spare_limit_) return false;
    spare_bytes_ += static_cast<int64_t>(b.length);  // claimed; given back below on failure
  }
  auto unclaim = [&] {
    std::lock_guard lock(spare_mutex_);
    spare_bytes_ -= static_cast<int64_t>(b.length);
  };
  // The pages move to an aligned spare range (page tables move, huge pages stay whole); with
  // MREMAP_DONTUNMAP the block's range stays mapped (empty) until made inaccessible, so no other
  // mapping can land in it meanwhile.
  void* target = try_map_anonymous(b.length, PROT_NONE);
  void* moved = target ? strider::detail::remap_pages(b.address, b.length, MREMAP_DONTUNMAP, target) : MAP_FAILED;
  if (moved == MAP_FAILED) {  // no address space, or an older kernel: release the pages instead
    if (target) munmap(target, b.length);
    unclaim();
    return false;
  }
  mprotect(b.address, b.length, PROT_NONE);
  std::lock_guard lock(spare_mutex_);
  spares_.emplace(b.length, moved);
  return true;
}

void OffloadTier::page_in(Block& b) {
  // Spare (or fresh) pages, filled from the file, then moved over the reservation in one step:
  // nobody can see a half-read block.
  void* fresh = take_spare(b.length);
  if (!fresh) fresh = map_anonymous(b.length, PROT_READ | PROT_WRITE, "offloaded state being read back");
  const int err = transfer(pread, fd_, static_cast<char*>(fresh), b.length, b.offset);
  if (err != 0) {
    munmap(fresh, b.length);
    STRIDER_CHECK(false, "CPUOffload", "cannot read ", b.length, " bytes of offloaded state back from the offload "
                  "file in '", directory_, "': ", std::strerror(err));
  }
  void* moved = strider::detail::remap_pages(fresh, b.length, 0, b.address);
  if (moved != b.address) {
    const int err = errno;
    munmap(fresh, b.length);
    STRIDER_CHECK(false, "CPUOffload", "cannot move ", b.length, " bytes of read-back state into place: ",
                  std::strerror(err));
  }
  add_held(static_cast<int64_t>(b.length));
}

void OffloadTier::make_resident(PagedBlock& block) {
  Block& b = static_cast<Block&>(block);
  std::unique_lock lock(b.mutex);
  for (;;) {
    const int s = b.state.load();
    if (s == PagedBlock::Resident) return;
    if (s == PagedBlock::EvictRequested || s == PagedBlock::WritingBack) {
      // Still in memory: keep it (the writer will not start, or will not release it).
      b.state.store(PagedBlock::Resident, std::memory_order_release);
      return;
    }
    if (b.reading) {  // the reader is bringing it back
      b.paged_in.wait(lock);
      continue;
    }
    b.reading = true;
    lock.unlock();
    try {
      page_in(b);
    } catch (...) {
      lock.lock();
      b.reading = false;
      b.paged_in.notify_all();
      throw;
    }
    lock.lock();
    b.reading = false;
    b.state.store(PagedBlock::Resident, std::memory_order_release);
    b.paged_in.notify_all();
    return;
  }
}

void OffloadTier::write_out(Block& b) {
  uint64_t generation;
  bool clean;
  {
    std::lock_guard lock(b.mutex);
    // Only an eviction nobody cancelled by touching the block since it was asked for.
    if (b.state.load() != PagedBlock::EvictRequested || b.reading) return;
    generation = b.generation ? b.generation->load(std::memory_order_relaxed) : 0;
    clean = b.written && b.generation && generation == b.written_generation;
    b.state.store(PagedBlock::WritingBack, std::memory_order_release);
  }
  int err = 0;
  if (!clean) err = transfer(pwrite, fd_, static_cast<char*>(b.address), b.length, b.offset);
  std::lock_guard lock(b.mutex);
  if (err != 0) {
    // Keep the bytes in memory: the only copy. Offload of this block is lost, not its data.
    b.state.store(PagedBlock::Resident, std::memory_order_release);
    std::fprintf(stderr, "strider: CPUOffload: cannot write %zu bytes to the offload file in '%s' (%s); keeping "
                 "them in memory\n", b.length, directory_.c_str(), std::strerror(err));
    return;
  }
  if (!clean) {
    b.written = true;
    b.written_generation = generation;
  }
  if (b.state.load() != PagedBlock::WritingBack) return;  // touched meanwhile: it stays
  if (keep_pages(b)) {
    b.state.store(PagedBlock::Away, std::memory_order_release);
    return;
  }
  // Release the pages and keep the range reserved (and inaccessible) at the same address.
  void* r = mmap(b.address, b.length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  if (r == MAP_FAILED) {
    b.state.store(PagedBlock::Resident, std::memory_order_release);
    return;
  }
  add_held(-static_cast<int64_t>(b.length));
  b.state.store(PagedBlock::Away, std::memory_order_release);
}

void OffloadTier::io_loop(Queue& queue, bool write) {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return !queue.pending.empty(); });
    void* p = queue.pending.front();
    queue.pending.pop_front();
    auto it = blocks_.find(p);
    if (it == blocks_.end()) continue;  // freed meanwhile
    Block& b = *it->second;
    ++b.io;
    if (write) writing_block_ = &b;
    lock.unlock();
    if (write) {
      write_out(b);
    } else {
      std::unique_lock block_lock(b.mutex);
      if (b.state.load() == PagedBlock::Away && !b.reading) {
        b.reading = true;
        block_lock.unlock();
        bool ok = true;
        try {
          page_in(b);
        } catch (const std::exception& e) {
          // A read ahead that fails is retried (and reported) by the access that needs it.
          ok = false;
        }
        block_lock.lock();
        b.reading = false;
        if (ok) b.state.store(PagedBlock::Resident, std::memory_order_release);
        b.paged_in.notify_all();
      }
    }
    lock.lock();
    --b.io;
    if (write) {
      writing_block_ = nullptr;
      if (!writes_.contains(p)) leave_backlog(b);  // evicted again while written: it stays queued
    }
    cv_.notify_all();
  }
}

void OffloadTier::wait_for_writes() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return writes_.pending.empty() && !writing_block_; });
}

bool OffloadTier::Queue::contains(void* p) const { return std::find(pending.begin(), pending.end(), p) != pending.end(); }

void OffloadTier::Queue::erase(void* p) { pending.erase(std::remove(pending.begin(), pending.end(), p), pending.end()); }

void OffloadTier::evict(const Tensor& t) {
  if (t.defined() && t.storage()) evict(t.storage()->address());
}

// Resident -> EvictRequested: from here until the writer starts, any access cancels it.
void OffloadTier::request_eviction(Block& b) {
  std::lock_guard lock(b.mutex);
  int expected = PagedBlock::Resident;
  b.state.compare_exchange_strong(expected, PagedBlock::EvictRequested);
}

void OffloadTier::evict(const void* address) {
  void* p = const_cast<void*>(address);
  std::unique_lock lock(mutex_);
  auto it = blocks_.find(p);
  if (it == blocks_.end()) return;
  reads_.erase(p);
  request_eviction(*it->second);
  if (!writes_.contains(p)) writes_.pending.push_back(p);
  enter_backlog(*it->second);
  cv_.notify_all();
  wait_for_backlog(lock);
}

void OffloadTier::evict_all() {
  std::lock_guard lock(mutex_);
  reads_.pending.clear();
  writes_.pending.clear();  // every block goes in once, whatever was queued before
  for (auto& [p, b] : blocks_) {
    if (b.get() != writing_block_) leave_backlog(*b);
    request_eviction(*b);
    writes_.pending.push_back(p);
    enter_backlog(*b);
  }
  // No wait: these blocks hold their memory already, and the next eviction waits for the bound.
  cv_.notify_all();
}

void OffloadTier::enter_backlog(Block& b) {
  const int s = b.state.load();
  if (b.in_backlog || (s != PagedBlock::EvictRequested && s != PagedBlock::WritingBack)) return;  // no memory to free
  b.in_backlog = true;
  backlog_ += static_cast<int64_t>(b.length);
  int64_t peak = peak_backlog_.load(std::memory_order_relaxed);
  while (backlog_ > peak && !peak_backlog_.compare_exchange_weak(peak, backlog_)) {
  }
}

void OffloadTier::leave_backlog(Block& b) {
  if (!b.in_backlog) return;
  b.in_backlog = false;
  backlog_ -= static_cast<int64_t>(b.length);
}

void OffloadTier::wait_for_backlog(std::unique_lock<std::mutex>& lock) {
  if (backlog_limit_ < 0 || backlog_ <= backlog_limit_) return;
  const auto start = std::chrono::steady_clock::now();
  cv_.wait(lock, [&] { return backlog_ <= backlog_limit_; });
  write_wait_ns_.fetch_add(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

void OffloadTier::limit_write_behind(int64_t bytes) {
  std::lock_guard lock(mutex_);
  backlog_limit_ = std::max(backlog_limit_, bytes);
  cv_.notify_all();
}

int64_t OffloadTier::write_backlog_bytes() {
  std::lock_guard lock(mutex_);
  return backlog_;
}

double OffloadTier::write_wait_seconds() const { return static_cast<double>(write_wait_ns_.load()) * 1e-9; }

void OffloadTier::reset_peak_held() {
  peak_held_.store(held_.load());
  std::lock_guard lock(mutex_);
  peak_backlog_.store(backlog_);
}

void OffloadTier::prefetch(const Tensor& t, bool urgent) {
  if (t.defined() && t.storage()) prefetch(t.storage()->address(), urgent);
}

void OffloadTier::prefetch(const void* address, bool urgent) {
  void* p = const_cast<void*>(address);
  std::lock_guard lock(mutex_);
  auto it = blocks_.find(p);
  if (it == blocks_.end()) return;
  writes_.erase(p);  // about to be used: writing it out now would only cost I/O
  if (it->second.get() != writing_block_) leave_backlog(*it->second);
  cancel_eviction(*it->second);
  if (urgent) {
    reads_.erase(p);
    reads_.pending.push_front(p);
  } else if (!reads_.contains(p)) {
    reads_.pending.push_back(p);
  }
  cv_.notify_all();
}

void OffloadTier::prefetch_all() {
  std::lock_guard lock(mutex_);
  writes_.pending.clear();
  reads_.pending.clear();
  for (auto& [p, b] : blocks_) {
    if (b.get() != writing_block_) leave_backlog(*b);
    cancel_eviction(*b);
    reads_.pending.push_back(p);
  }
  cv_.notify_all();
}

void OffloadTier::cancel_eviction(Block& b) {
  std::lock_guard lock(b.mutex);
  int expected = PagedBlock::EvictRequested;
  b.state.compare_exchange_strong(expected, PagedBlock::Resident);
}

int64_t OffloadTier::block_bytes(const void* address) {
  std::lock_guard lock(mutex_);
  auto it = blocks_.find(const_cast<void*>(address));
  return it == blocks_.end() ? 0 : static_cast<int64_t>(it->second->length);
}

}  // namespace strider::fsdp::detail
