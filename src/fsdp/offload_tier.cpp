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
  cv_.wait(lock, [&] { return busy_ != ptr; });  // never unmap a range the I/O thread is advising
  auto it = mappings_.find(ptr);
  if (it == mappings_.end()) return;
  munmap(ptr, it->second);
  bytes_ -= static_cast<int64_t>(it->second);
  mappings_.erase(it);
}

OffloadTier::OffloadTier(std::string directory) : directory_(std::move(directory)) {
  io_ = std::thread([this] { io_loop(); });
  io_.detach();
}

void OffloadTier::io_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return !pending_.empty(); });
    void* p = pending_.front();
    pending_.pop_front();
    auto it = mappings_.find(p);
    if (it == mappings_.end()) continue;  // freed meanwhile
    const size_t len = it->second;
    busy_ = p;
    lock.unlock();  // writing back takes a while; evict() and allocate() must not wait for it
    // MADV_PAGEOUT (Linux 5.4+) writes dirty file pages back and reclaims them. Older kernels:
    // MADV_DONTNEED drops them from this process (the page cache keeps them until memory is
    // needed). Either way the file keeps the data.
#ifdef MADV_PAGEOUT
    if (madvise(p, len, MADV_PAGEOUT) != 0)
#endif
      madvise(p, len, MADV_DONTNEED);
    lock.lock();
    busy_ = nullptr;
    cv_.notify_all();
  }
}

void OffloadTier::evict(const Tensor& t) {
  if (!t.defined() || !t.storage()) return;
  std::lock_guard lock(mutex_);
  void* p = t.storage()->data();
  if (!mappings_.count(p)) return;
  if (std::find(pending_.begin(), pending_.end(), p) == pending_.end()) pending_.push_back(p);
  cv_.notify_one();
}

void OffloadTier::evict_all() {
  std::lock_guard lock(mutex_);
  pending_.clear();  // every mapping goes in once, whatever was queued before
  for (auto& [p, len] : mappings_) pending_.push_back(p);
  cv_.notify_one();
}

void OffloadTier::prefetch_all() {
  std::lock_guard lock(mutex_);
  pending_.clear();  // about to be used: paging them out now would only cost I/O
  for (auto& [p, len] : mappings_) madvise(p, len, MADV_WILLNEED);
}

}  // namespace strider::fsdp::detail
