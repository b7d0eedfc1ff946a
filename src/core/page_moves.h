#pragma once
// Moving pages from one address range to another with mremap, which moves page tables instead of
// copying or faulting (the allocator's page extents, FSDP's offload tier).
#include <cstddef>

namespace strider::detail {

// mremap(from, length, length, MREMAP_MAYMOVE | MREMAP_FIXED | flags, to) as the kernel defines
// it, through the system call: libraries that interpose mremap for their own bookkeeping (UCX's
// memory hooks, loaded by Debian's MPICH) pass on only its first four arguments, so the kernel
// would read `to` from a stale register and map the pages over whatever lies there. (Those
// libraries' caches are then not told of the move; strider never registers these ranges with
// them.) Returns `to`, or MAP_FAILED with errno set.
void* remap_pages(void* from, size_t length, int flags, void* to);

}  // namespace strider::detail
