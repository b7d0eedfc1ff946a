#include "core/page_extent_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "core/page_moves.h"

namespace strider::detail {
namespace {

// `bytes` of fresh anonymous memory at a kGranule boundary (so later moves go a page-table
// entry at a time), or null.
char* map_aligned(size_t bytes) {
  return static_cast<char*>(map_aligned_pages(bytes, PageExtentCache::kGranule, PROT_READ | PROT_WRITE, 0, false));
}

}  // namespace

PageExtentCache::Taken PageExtentCache::take(size_t bytes) {
  Taken t;
  std::vector<Range> idle, pieces;
  size_t covered = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sweep_locked(idle);
    if (auto fit = by_size_.lower_bound(bytes); fit != by_size_.end()) {
      pieces.emplace_back(fit->second, bytes);
      cut_locked(fit->second, bytes);
      covered = bytes;
    } else {
      // No extent holds it: the largest ones, joined.
      while (covered < bytes && !by_size_.empty()) {
        const auto largest = std::prev(by_size_.end());
        const size_t use = std::min(largest->first, bytes - covered);
        pieces.emplace_back(largest->second, use);
        cut_locked(largest->second, use);
        covered += use;
      }
    }
  }
  t.released_bytes = unmap(idle);
  if (pieces.size() == 1 && covered == bytes) {
    t.ptr = pieces.front().first;
    return t;
  }
  char* block = map_aligned(bytes);
  if (!block) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [addr, n] : pieces) insert_locked(addr, {n, Clock::now()});
    return t;
  }
  size_t offset = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const auto [from, n] = pieces[i];
    const size_t moved = move(from, n, block + offset);
    if (moved == n) {
      offset += n;
      continue;
    }
    // The kernel would not move a granule (out of mappings or memory): give this block up. What
    // moved is in it, the rest still at its source. The failed granule's target may have been
    // unmapped by the failed call (older kernels unmap it first) and be someone else's by now:
    // it is left alone, 2 MiB of address space at worst.
    const size_t done = offset + moved, after = done + kGranule;
    if (done > 0) munmap(block, done);
    if (after < bytes) munmap(block + after, bytes - after);
    munmap(from + moved, n - moved);
    for (size_t j = i + 1; j < pieces.size(); ++j) munmap(pieces[j].first, pieces[j].second);
    t.released_bytes += covered;
    t.ptr = map_aligned(bytes);
    t.fresh_bytes = t.ptr ? bytes : 0;
    return t;
  }
  t.ptr = block;
  t.fresh_bytes = bytes - covered;
  return t;
}

size_t PageExtentCache::put(void* ptr, size_t bytes) {
  std::vector<Range> idle;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sweep_locked(idle);
    if (cached_ + bytes > kLimit)
      idle.emplace_back(static_cast<char*>(ptr), bytes);
    else
      insert_locked(static_cast<char*>(ptr), {bytes, Clock::now()});
  }
  return unmap(idle);
}

size_t PageExtentCache::bytes() {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

size_t PageExtentCache::clear() {
  std::vector<Range> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [addr, e] : by_address_) all.emplace_back(addr, e.bytes);
    by_address_.clear();
    by_size_.clear();
    cached_ = 0;
  }
  return unmap(all);
}

void PageExtentCache::insert_locked(char* addr, Extent e) {
  if (auto next = by_address_.find(addr + e.bytes); next != by_address_.end()) {
    const Extent n = erase_locked(next->first);
    e = {e.bytes + n.bytes, std::max(e.freed, n.freed)};
  }
  if (auto after = by_address_.lower_bound(addr); after != by_address_.begin()) {
    const auto prev = std::prev(after);
    if (prev->first + prev->second.bytes == addr) {
      char* start = prev->first;
      const Extent p = erase_locked(start);
      addr = start;
      e = {p.bytes + e.bytes, std::max(e.freed, p.freed)};
    }
  }
  by_address_.emplace(addr, e);
  by_size_.emplace(e.bytes, addr);
  cached_ += e.bytes;
}

PageExtentCache::Extent PageExtentCache::erase_locked(char* addr) {
  const auto it = by_address_.find(addr);
  const Extent e = it->second;
  by_address_.erase(it);
  for (auto [s, end] = by_size_.equal_range(e.bytes); s != end; ++s)
    if (s->second == addr) {
      by_size_.erase(s);
      break;
    }
  cached_ -= e.bytes;
  return e;
}

void PageExtentCache::cut_locked(char* addr, size_t used) {
  const Extent e = erase_locked(addr);
  if (e.bytes > used) insert_locked(addr + used, {e.bytes - used, e.freed});
}

void PageExtentCache::sweep_locked(std::vector<Range>& out) {
  const auto now = Clock::now();
  if (now < next_sweep_) return;
  next_sweep_ = now + std::chrono::seconds(1);
  std::vector<char*> stale;
  for (const auto& [addr, e] : by_address_)
    if (now - e.freed >= kDecay) stale.push_back(addr);
  for (char* addr : stale) out.emplace_back(addr, erase_locked(addr).bytes);
}

size_t PageExtentCache::unmap(const std::vector<Range>& ranges) {
  size_t total = 0;
  for (const auto& [addr, n] : ranges) {
    munmap(addr, n);
    total += n;
  }
  return total;
}

size_t PageExtentCache::move(char* from, size_t bytes, char* to) {
  for (size_t off = 0; off < bytes; off += kGranule)
    if (remap_pages(from + off, kGranule, 0, to + off) != to + off) return off;
  return bytes;
}

}  // namespace strider::detail
