#include "strider/ops/kernel_choice.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "kernels/cpu_isa.h"
#include "strider/core/error.h"
#include "strider/ops/check_mode.h"

namespace strider {

KernelPreference kernel_preference() { return Context::this_thread().kernel_preference; }
KernelPreferenceGuard::KernelPreferenceGuard(KernelPreference p) : saved_(kernel_preference()) {
  Context::this_thread().kernel_preference = p;
}
KernelPreferenceGuard::~KernelPreferenceGuard() { Context::this_thread().kernel_preference = saved_; }
void set_kernel_verbose(bool on) {
  // The instruction set decides several choices (bfloat16 through float32 below AVX-512): say it once.
  static std::once_flag said;
  if (on) std::call_once(said, [] { std::fprintf(stderr, "strider: kernels use %s\n", cpu_isa_name().c_str()); });
  Context::process().kernel_verbose = on;
}
void set_kernel_autotune(bool on) { Context::process().kernel_autotune = on; }
bool kernel_autotune() { return Context::process().kernel_autotune.load(); }
bool kernel_verbose() { return Context::process().kernel_verbose; }
std::string cpu_isa_name() { return kernels::isa_name(kernels::cpu_isa()); }

namespace {

bool env_switch(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v || std::string(v) == "0") return false;
  STRIDER_CHECK(std::string(v) == "1", name, "environment variable ", name, "='", v,
                "' is not a switch; set it to 1 (on) or 0 (off), or unset it");
  return true;
}

}  // namespace

void apply_environment_switches() {
  // All three read before any is applied: a bad value changes nothing.
  const bool check = env_switch("STRIDER_CHECK_MEMORY_FORMAT");
  const bool verbose = env_switch("STRIDER_VERBOSE");
  const bool autotune = env_switch("STRIDER_AUTOTUNE");
  set_memory_format_check(check);
  set_kernel_verbose(verbose);
  set_kernel_autotune(autotune);
}

}  // namespace strider
