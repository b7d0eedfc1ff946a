#pragma once
// Which implementation runs an op. Op families pick from an ordered list (oneDNN where it
// applies, then our vectorized kernels, then the naive reference); tests force the reference to
// compare, and verbose mode logs each choice and every rejection with its reason to stderr.
#include <string>

#include "strider/core/context.h"

namespace strider {

// This thread's preference (Context::this_thread()).
KernelPreference kernel_preference();

class KernelPreferenceGuard {
 public:
  explicit KernelPreferenceGuard(KernelPreference p);
  ~KernelPreferenceGuard();
  KernelPreferenceGuard(const KernelPreferenceGuard&) = delete;
  KernelPreferenceGuard& operator=(const KernelPreferenceGuard&) = delete;

 private:
  KernelPreference saved_;
};

// Logs "strider: <op> -> <implementation>[; <other> rejected: <why>]" for every kernel dispatch
// (STRIDER_VERBOSE=1 through apply_environment_switches()).
void set_kernel_verbose(bool on);
bool kernel_verbose();

// Autotune (process-wide, off by default; STRIDER_AUTOTUNE=1 through apply_environment_switches()): the first call
// of each convolution shape times oneDNN's implementations on its own buffers and keeps the
// fastest for the rest of the run, as cudnn.benchmark does. The pick depends on timing, so
// results may differ in the last bits from run to run; deterministic mode refuses it.
// Primitives created before it was switched on keep oneDNN's first choice until empty_cache().
void set_kernel_autotune(bool on);
bool kernel_autotune();

// The instruction set strider's own kernels and oneDNN run with: the widest this CPU has
// ("avx2", "avx512", "avx512_bf16", "amx_bf16": AMX tiles, which oneDNN's kernels and attention's
// bfloat16 products use),
// capped by the environment variable STRIDER_MAX_CPU_ISA.
// Below AVX-512, bfloat16 convolution, matmul, normalization and pooling compute in float32.
std::string cpu_isa_name();

// What the strider tools do first: STRIDER_CHECK_MEMORY_FORMAT, STRIDER_VERBOSE and
// STRIDER_AUTOTUNE from the environment applied to set_memory_format_check, set_kernel_verbose and
// set_kernel_autotune (unset, empty or 0 is off, 1 is on; any other value throws strider::Error
// naming the variable, so a misspelt value never leaves a check silently off). The library reads
// no switch by itself: call this first in your own main to honour them.
void apply_environment_switches();

}  // namespace strider
