#pragma once
// Picks the implementation of an op family from its ordered list and logs the choice.
#include <cstdio>

#include "kernels/implementation_list.h"
#include "strider/ops/kernel_choice.h"

namespace strider::ops {

// This thread's kernel preference and the verbose flag, for an op family's implementation list.
inline kernels::Dispatch dispatch(const char* op) {
  return {op, kernel_preference() == KernelPreference::Reference, kernel_verbose()};
}

// Runs `fast` unless the reference was requested on this thread (families not yet on an
// implementation list).
template <class Fast, class Ref>
void run_kernel(const char* op, Fast&& fast, Ref&& ref) {
  const bool use_ref = kernel_preference() == KernelPreference::Reference;
  if (kernel_verbose()) std::fprintf(stderr, "strider: %s -> %s\n", op, use_ref ? "ref" : "cpu");
  if (use_ref) ref();
  else fast();
}

}  // namespace strider::ops
