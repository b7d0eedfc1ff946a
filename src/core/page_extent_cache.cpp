#include "core/page_extent_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace strider::detail {
namespace {

// `bytes` of fresh anonymous memory at a kGranule boundary (so later moves go a page-table
// entry at a time), or null.
char* map_aligned(size_t bytes) {
  const size_t g = PageExtentCache::kGranule;
  void* raw = mmap(nullptr, bytes + g, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto a = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = (a + g - 1) / g * g;
  if (start > a) munmap(raw, start - a);
  if (const size_t tail = a + bytes + g - (start + bytes); tail > 0) munmap(reinterpret_cast<char*>(start + bytes), tail);
  return reinterpret_cast<char*>(start);
}

}  // namespace

PageExtentCache::Taken PageExtentCache::take(size_t bytes) {
  Taken t;
  std::vector<Extent> idle, pieces;
  size_t covered = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sweep_locked(idle);
    if (auto fit = extents_.lower_bound(bytes); fit != extents_.end()) {
      pieces.push_back(cut_locked(fit, bytes));
      covered = bytes;
    } else {
      // No extent holds it: the largest ones, joined.
      while (covered < bytes && !extents_.empty()) {
        const auto largest = std::prev(extents_.end());
        const size_t use = std::min(largest->first, bytes - covered);
        pieces.push_back(cut_locked(largest, use));
        covered += use;
      }
    }
  }
  t.released_bytes = unmap(idle);
  if (pieces.size() == 1 && covered == bytes) {
    t.ptr = pieces.front().addr;
    return t;
  }
  char* block = map_aligned(bytes);
  if (!block) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Extent& e : pieces) {
      extents_.emplace(e.bytes, e);
      cached_ += e.bytes;
    }
    return t;
  }
  size_t offset = 0;
  for (const Extent& e : pieces) {
    if (mremap(e.addr, e.bytes, e.bytes, MREMAP_MAYMOVE | MREMAP_FIXED, block + offset) == MAP_FAILED) {
      // Not moved (the system's limit on mappings): that part of the block stays fresh pages.
      munmap(e.addr, e.bytes);
      t.released_bytes += e.bytes;
      covered -= e.bytes;
    }
    offset += e.bytes;
  }
  t.ptr = block;
  t.fresh_bytes = bytes - covered;
  return t;
}

size_t PageExtentCache::put(void* ptr, size_t bytes) {
  std::vector<Extent> idle;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sweep_locked(idle);
    const Extent e{static_cast<char*>(ptr), bytes, Clock::now()};
    if (cached_ + bytes > limit_) {
      idle.push_back(e);
    } else {
      extents_.emplace(bytes, e);
      cached_ += bytes;
    }
  }
  return unmap(idle);
}

size_t PageExtentCache::bytes() {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

size_t PageExtentCache::clear() {
  std::vector<Extent> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [size, e] : extents_) all.push_back(e);
    extents_.clear();
    cached_ = 0;
  }
  return unmap(all);
}

void PageExtentCache::sweep_locked(std::vector<Extent>& out) {
  const auto now = Clock::now();
  if (now < next_sweep_) return;
  next_sweep_ = now + std::chrono::seconds(1);
  for (auto it = extents_.begin(); it != extents_.end();) {
    if (now - it->second.freed < kDecay) {
      ++it;
      continue;
    }
    out.push_back(it->second);
    cached_ -= it->first;
    it = extents_.erase(it);
  }
}

PageExtentCache::Extent PageExtentCache::cut_locked(std::multimap<size_t, Extent>::iterator it, size_t used) {
  const Extent e = it->second;
  extents_.erase(it);
  cached_ -= e.bytes;
  if (e.bytes > used) {
    extents_.emplace(e.bytes - used, Extent{e.addr + used, e.bytes - used, e.freed});
    cached_ += e.bytes - used;
  }
  return {e.addr, used, e.freed};
}

size_t PageExtentCache::unmap(const std::vector<Extent>& extents) {
  size_t total = 0;
  for (const Extent& e : extents) {
    munmap(e.addr, e.bytes);
    total += e.bytes;
  }
  return total;
}

}  // namespace strider::detail
