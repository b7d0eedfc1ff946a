#pragma once
// PyTorch's memory-overlap rules (ATen's MemoryOverlap.cpp) for ops that write into a tensor the
// caller gave: an output whose elements share memory (an expanded tensor), or an input that
// overlaps the output only in part (b[1:].add_(b[:-1]), a.copy_(a.t())), would make the
// result depend on the order the kernel visits elements, so PyTorch refuses both. An input that
// is the output itself, or the same elements with the same strides, is allowed; what cannot be
// decided cheaply (a tensor that is not non-overlapping and dense) is allowed, as there.
#include <initializer_list>

#include "strider/core/tensor.h"

namespace strider::ops {

// Throws a strider::Error naming `op` and the clone() fix when `out` overlaps itself or one of
// `inputs` overlaps it in part.
void check_no_overlap(const char* op, const Tensor& out, std::initializer_list<const Tensor*> inputs);

}  // namespace strider::ops
