#include "core/page_moves.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace strider::detail {

void* remap_pages(void* from, size_t length, int flags, void* to) {
  const long r = syscall(SYS_mremap, from, length, length, MREMAP_MAYMOVE | MREMAP_FIXED | flags, to);
  return r == -1 ? MAP_FAILED : reinterpret_cast<void*>(r);
}

}  // namespace strider::detail
