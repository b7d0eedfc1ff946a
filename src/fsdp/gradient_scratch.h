#pragma once
// Memory for the sharded gradients of offloaded units. A gradient lives only from its unit's
// reduce-scatter to the optimizer step, so writing it to the offload files would only cost I/O:
// it sits in anonymous pages instead, which release() hands back to the system once the
// optimizer consumed them (a later touch gets fresh zero pages).
#include "strider/core/allocator.h"
#include "strider/core/tensor.h"

namespace strider::fsdp::detail {

class GradientScratch final : public Allocator {
 public:
  // The process's scratch: a slot of Context::process(), so never destroyed.
  static GradientScratch& of_process();
  void* allocate(size_t nbytes) override;
  void deallocate(void* ptr, size_t nbytes) override;
  // Drops t's pages from resident memory; its contents become zeros.
  void release(const Tensor& t);
};

}  // namespace strider::fsdp::detail
