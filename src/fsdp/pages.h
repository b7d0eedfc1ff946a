#pragma once
// Page-granular sizes for the memory FSDP maps itself (offload files, gradient scratch).
#include <unistd.h>

#include <cstddef>

namespace strider::fsdp::detail {

// nbytes rounded up to whole pages (one page for zero bytes, so every mapping is distinct).
inline size_t page_round(size_t nbytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return nbytes == 0 ? page : (nbytes + page - 1) / page * page;
}

}  // namespace strider::fsdp::detail
