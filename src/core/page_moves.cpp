#include "core/page_moves.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace strider::detail {

void* remap_pages(void* from, size_t length, int flags, void* to) {
  const long r = syscall(SYS_mremap, from, length, length, MREMAP_MAYMOVE | MREMAP_FIXED | flags, to);
  return r == -1 ? MAP_FAILED : reinterpret_cast<void*>(r);
}

void* map_aligned_pages(size_t length, size_t align, int protection, int flags, bool huge) {
  // Map `align` bytes more than asked, then unmap what lies before the aligned start and after its end.
  const size_t extra = align > 1 ? align : 0;
  void* raw = mmap(nullptr, length + extra, protection, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto begin = reinterpret_cast<uintptr_t>(raw), end = begin + length + extra;
  const uintptr_t start = align > 1 ? (begin + align - 1) & ~(uintptr_t{align} - 1) : begin;
  if (start > begin) munmap(raw, start - begin);
  if (end > start + length) munmap(reinterpret_cast<void*>(start + length), end - (start + length));
  if (huge) madvise(reinterpret_cast<void*>(start), length, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(start);
}

}  // namespace strider::detail
