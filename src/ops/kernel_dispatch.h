#pragma once
// How this thread wants an op family's implementation list dispatched.
#include "kernels/implementation_list.h"
#include "strider/ops/kernel_choice.h"

namespace strider::ops {

// This thread's kernel preference and the verbose flag, for an op family's implementation list.
inline kernels::Dispatch dispatch(const char* op) {
  return {op, kernel_preference() == KernelPreference::Reference, kernel_verbose()};
}

}  // namespace strider::ops
