#include "fsdp/offload_tier.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>

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
}  // namespace

OffloadTier* OffloadTier::open(const std::string& directory) {
  OffloadTiers& tiers = Context::process().slot<OffloadTiers>();
  std::lock_guard lock(tiers.mutex);
  auto& t = tiers.by_directory[directory];
  if (!t) t.reset(new OffloadTier(directory));
  return t.get();
}

void* OffloadTier::allocate(size_t nbytes) {
  const size_t len = page_round(nbytes);
  std::string path = directory_ + "/strider-offload-XXXXXX";
  int fd = mkstemp(path.data());
  STRIDER_CHECK(fd >= 0, "CPUOffload", "cannot create an offload file in '", directory_, "': ", std::strerror(errno),
                "; set CPUOffload::directory to a writable local directory");
  unlink(path.c_str());  // the mapping keeps the file; nothing is left behind on exit
  const bool sized = ftruncate(fd, static_cast<off_t>(len)) == 0;
  void* p = sized ? mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  const int err = errno;
  close(fd);
  STRIDER_CHECK(p != MAP_FAILED, "CPUOffload", "cannot map ", nbytes, " bytes of offload file in '", directory_,
                "': ", std::strerror(err), " (disk full?)");
  std::lock_guard lock(mutex_);
  mappings_[p] = len;
  bytes_ += static_cast<int64_t>(len);
  return p;
}

void OffloadTier::deallocate(void* ptr, size_t) {
  if (!ptr) return;
  std::unique_lock lock(mutex_);
  // Never unmap a range an I/O thread is advising.
  cv_.wait(lock, [&] { return reads_.busy != ptr && writes_.busy != ptr; });
  reads_.erase(ptr);
  writes_.erase(ptr);
  auto it = mappings_.find(ptr);
  if (it == mappings_.end()) return;
  munmap(ptr, it->second);
  bytes_ -= static_cast<int64_t>(it->second);
  mappings_.erase(it);
}

bool OffloadTier::Queue::contains(void* p) const {
  return std::any_of(pending.begin(), pending.end(), [p](const Request& r) { return r.mapping == p; });
}

void OffloadTier::Queue::erase(void* p) {
  pending.erase(std::remove_if(pending.begin(), pending.end(), [p](const Request& r) { return r.mapping == p; }),
                pending.end());
}

OffloadTier::OffloadTier(std::string directory) : directory_(std::move(directory)) {
  reader_ = std::thread([this] { io_loop(reads_, false); });
  writer_ = std::thread([this] { io_loop(writes_, true); });
  reader_.detach();
  writer_.detach();
}

void OffloadTier::io_loop(Queue& queue, bool write_back) {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return !queue.pending.empty(); });
    const Request r = queue.pending.front();
    queue.pending.pop_front();
    auto it = mappings_.find(r.mapping);
    if (it == mappings_.end()) continue;  // freed meanwhile
    const size_t len = it->second;
    queue.busy = r.mapping;
    lock.unlock();  // I/O takes a while; evict(), prefetch() and allocate() must not wait for it
    if (write_back) {
      // MADV_PAGEOUT (Linux 5.4+) writes dirty file pages back and reclaims them. Older kernels:
      // MADV_DONTNEED drops them from this process (the page cache keeps them until memory is
      // needed). Either way the file keeps the data.
#ifdef MADV_PAGEOUT
      if (madvise(r.mapping, len, MADV_PAGEOUT) != 0)
#endif
        madvise(r.mapping, len, MADV_DONTNEED);
    } else {
      // MADV_POPULATE_* (Linux 5.14+) reads the pages and maps them here, so the compute thread
      // takes no page fault per 4 KiB; older kernels only start the read-ahead.
      int populated = -1;
#if defined(MADV_POPULATE_READ) && defined(MADV_POPULATE_WRITE)
      populated = madvise(r.mapping, len, r.write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
#endif
      if (populated != 0) madvise(r.mapping, len, MADV_WILLNEED);
    }
    lock.lock();
    queue.busy = nullptr;
    cv_.notify_all();
  }
}

void OffloadTier::evict(const Tensor& t) {
  if (t.defined() && t.storage()) evict(t.storage()->data());
}

void OffloadTier::evict(const void* mapping) {
  void* p = const_cast<void*>(mapping);
  std::lock_guard lock(mutex_);
  if (!mappings_.count(p)) return;
  reads_.erase(p);
  if (!writes_.contains(p)) writes_.pending.push_back({p, false});
  cv_.notify_all();
}

void OffloadTier::evict_all() {
  std::lock_guard lock(mutex_);
  reads_.pending.clear();
  writes_.pending.clear();  // every mapping goes in once, whatever was queued before
  for (auto& [p, len] : mappings_) writes_.pending.push_back({p, false});
  cv_.notify_all();
}

void OffloadTier::prefetch(const Tensor& t, bool for_write, bool urgent) {
  if (t.defined() && t.storage()) prefetch(t.storage()->data(), for_write, urgent);
}

void OffloadTier::prefetch(const void* mapping, bool for_write, bool urgent) {
  void* p = const_cast<void*>(mapping);
  std::lock_guard lock(mutex_);
  if (!mappings_.count(p)) return;
  writes_.erase(p);  // about to be used: paging it out now would only cost I/O
  if (urgent) {
    reads_.erase(p);
    reads_.pending.push_front({p, for_write});
  } else if (!reads_.contains(p)) {
    reads_.pending.push_back({p, for_write});
  }
  cv_.notify_all();
}

void OffloadTier::prefetch_all() {
  std::lock_guard lock(mutex_);
  writes_.pending.clear();
  reads_.pending.clear();
  for (auto& [p, len] : mappings_) reads_.pending.push_back({p, true});
  cv_.notify_all();
}

int64_t OffloadTier::mapping_bytes(const void* mapping) {
  std::lock_guard lock(mutex_);
  auto it = mappings_.find(const_cast<void*>(mapping));
  return it == mappings_.end() ? 0 : static_cast<int64_t>(it->second);
}

}  // namespace strider::fsdp::detail
