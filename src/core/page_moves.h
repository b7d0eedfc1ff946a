#pragma once
// Anonymous page ranges for the allocator's page extents and FSDP's offload tier: mapped at an
// alignment, and moved from one address range to another with mremap, which moves page tables
// instead of copying or faulting.
#include <cstddef>

namespace strider::detail {

// mremap(from, length, length, MREMAP_MAYMOVE | MREMAP_FIXED | flags, to) as the kernel defines
// it, through the system call: libraries that interpose mremap for their own bookkeeping (UCX's
// memory hooks, loaded by Debian's MPICH) pass on only its first four arguments, so the kernel
// would read `to` from a stale register and map the pages over whatever lies there. (Those
// libraries' caches are then not told of the move; strider never registers these ranges with
// them.) Returns `to`, or MAP_FAILED with errno set.
void* remap_pages(void* from, size_t length, int flags, void* to);

// A private anonymous mapping of `length` bytes starting at a multiple of `align` (a power of
// two; 1 for none), with mmap's `protection` and extra `flags` (MAP_NORESERVE, say); huge pages
// asked for with MADV_HUGEPAGE when `huge`. Null when the kernel refuses.
void* map_aligned_pages(size_t length, size_t align, int protection, int flags, bool huge);

}  // namespace strider::detail
