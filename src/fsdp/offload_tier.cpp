#include "fsdp/offload_tier.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>

#include "strider/core/error.h"

namespace strider::fsdp::detail {
namespace {

size_t page_round(size_t n) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return n == 0 ? page : (n + page - 1) / page * page;
}

}  // namespace

OffloadTier* OffloadTier::open(const std::string& directory) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<OffloadTier>>* tiers = new std::map<std::string, std::unique_ptr<OffloadTier>>;
  std::lock_guard lock(mutex);
  auto& t = (*tiers)[directory];
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
  std::lock_guard lock(mutex_);
  auto it = mappings_.find(ptr);
  if (it == mappings_.end()) return;
  munmap(ptr, it->second);
  bytes_ -= static_cast<int64_t>(it->second);
  mappings_.erase(it);
}

void OffloadTier::evict_range(void* ptr, size_t nbytes) {
  // MADV_PAGEOUT (Linux 5.4+) writes dirty file pages back and reclaims them; MADV_DONTNEED
  // drops them from this process (the page cache keeps them until memory is needed).
#ifdef MADV_PAGEOUT
  if (madvise(ptr, nbytes, MADV_PAGEOUT) == 0) return;
#endif
  madvise(ptr, nbytes, MADV_DONTNEED);
}

void OffloadTier::evict(const Tensor& t) {
  if (!t.defined() || !t.storage()) return;
  std::lock_guard lock(mutex_);
  auto it = mappings_.find(t.storage()->data());
  if (it != mappings_.end()) evict_range(it->first, it->second);
}

void OffloadTier::evict_all() {
  std::lock_guard lock(mutex_);
  for (auto& [p, len] : mappings_) evict_range(p, len);
}

}  // namespace strider::fsdp::detail
