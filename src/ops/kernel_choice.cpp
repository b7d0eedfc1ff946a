#include "strider/ops/kernel_choice.h"

#include <cstdio>
#include <mutex>

#include "kernels/cpu_isa.h"

namespace strider {

KernelPreference kernel_preference() { return Context::this_thread().kernel_preference; }
KernelPreferenceGuard::KernelPreferenceGuard(KernelPreference p) : saved_(kernel_preference()) {
  Context::this_thread().kernel_preference = p;
}
KernelPreferenceGuard::~KernelPreferenceGuard() { Context::this_thread().kernel_preference = saved_; }
void set_kernel_verbose(bool on) { Context::process().kernel_verbose = on; }
void set_kernel_autotune(bool on) { Context::process().kernel_autotune = on; }
bool kernel_autotune() { return Context::process().kernel_autotune.load(); }
bool kernel_verbose() {
  const bool on = Context::process().kernel_verbose;
  // The instruction set decides several choices (bfloat16 through float32 below AVX-512): the log
  // says it once, first.
  static std::once_flag said;
  if (on) std::call_once(said, [] { std::fprintf(stderr, "strider: kernels use %s\n", cpu_isa_name().c_str()); });
  return on;
}
std::string cpu_isa_name() { return kernels::isa_name(kernels::cpu_isa()); }

}  // namespace strider
