#include "strider/ops/kernel_choice.h"

namespace strider {

KernelPreference kernel_preference() { return Context::this_thread().kernel_preference; }
KernelPreferenceGuard::KernelPreferenceGuard(KernelPreference p) : saved_(kernel_preference()) {
  Context::this_thread().kernel_preference = p;
}
KernelPreferenceGuard::~KernelPreferenceGuard() { Context::this_thread().kernel_preference = saved_; }
void set_kernel_verbose(bool on) { Context::process().kernel_verbose = on; }
void set_kernel_autotune(bool on) { Context::process().kernel_autotune = on; }
bool kernel_autotune() { return Context::process().kernel_autotune.load(); }
bool kernel_verbose() { return Context::process().kernel_verbose; }

}  // namespace strider
