#pragma once
// Memory-format check mode (the PyTorch channels-last tutorial's operator check, built in).
// While on, any op that receives a channels-last input and returns a 4-d output that is not
// channels-last throws strider::Error naming the op and the inputs' shapes and strides. Ops whose
// documented output is contiguous (reductions, softmax, layer_norm, linear; SPEC §9, §13) are
// exempt: losing the format there is the rule, not a bug. STRIDER_CHECK_MEMORY_FORMAT=1 turns it
// on through apply_environment_switches() (strider/ops/kernel_choice.h), as the tools do.
#include <initializer_list>

#include "strider/core/tensor.h"

namespace strider {

void set_memory_format_check(bool on);
bool memory_format_check_enabled();

class MemoryFormatCheckGuard {
 public:
  explicit MemoryFormatCheckGuard(bool on = true);
  ~MemoryFormatCheckGuard();
  MemoryFormatCheckGuard(const MemoryFormatCheckGuard&) = delete;
  MemoryFormatCheckGuard& operator=(const MemoryFormatCheckGuard&) = delete;

 private:
  bool saved_;
};

namespace ops {
// Called by format-propagating ops on their result; a no-op unless the check mode is on.
void check_memory_format_kept(const char* op, std::initializer_list<const Tensor*> inputs,
                              const Tensor& output);
}  // namespace ops

}  // namespace strider
