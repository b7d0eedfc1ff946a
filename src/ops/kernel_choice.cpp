#include "strider/ops/kernel_choice.h"

#include <atomic>

namespace strider {
namespace {
thread_local KernelPreference t_preference = KernelPreference::Fastest;
std::atomic<bool> g_verbose{false};
}  // namespace

KernelPreference kernel_preference() { return t_preference; }
KernelPreferenceGuard::KernelPreferenceGuard(KernelPreference p) : saved_(t_preference) { t_preference = p; }
KernelPreferenceGuard::~KernelPreferenceGuard() { t_preference = saved_; }
void set_kernel_verbose(bool on) { g_verbose = on; }
bool kernel_verbose() { return g_verbose; }

}  // namespace strider
