#include "fsdp/gradient_scratch.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "fsdp/pages.h"
#include "strider/core/context.h"
#include "strider/core/error.h"

namespace strider::fsdp::detail {
GradientScratch& GradientScratch::of_process() { return Context::process().slot<GradientScratch>(); }

void* GradientScratch::allocate(size_t nbytes) {
  void* p = mmap(nullptr, page_round(nbytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  STRIDER_CHECK(p != MAP_FAILED, "CPUOffload", "cannot map ", nbytes, " bytes for gradients: ", std::strerror(errno));
  return p;
}

void GradientScratch::deallocate(void* ptr, size_t nbytes) {
  if (ptr) munmap(ptr, page_round(nbytes));
}

void GradientScratch::release(const Tensor& t) {
  if (!t.defined() || !t.storage()) return;
  madvise(t.storage()->data(), page_round(t.storage()->nbytes()), MADV_DONTNEED);
}

}  // namespace strider::fsdp::detail
