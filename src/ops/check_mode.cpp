#include "strider/ops/check_mode.h"

#include <atomic>
#include <sstream>

namespace strider {
namespace {
std::atomic<bool> g_check{false};
}

void set_memory_format_check(bool on) { g_check = on; }
bool memory_format_check_enabled() { return g_check; }
MemoryFormatCheckGuard::MemoryFormatCheckGuard(bool on) : saved_(g_check) { g_check = on; }
MemoryFormatCheckGuard::~MemoryFormatCheckGuard() { g_check = saved_; }

namespace ops {

void check_memory_format_kept(const char* op, std::initializer_list<const Tensor*> inputs,
                              const Tensor& output) {
  if (!g_check.load(std::memory_order_relaxed)) [[likely]] return;
  // An ambiguous output (NC11, N1HW) that is channels-last contiguous counts as kept.
  if (output.dim() != 4 || output.suggest_memory_format() == MemoryFormat::ChannelsLast ||
      output.is_contiguous(MemoryFormat::ChannelsLast))
    return;
  bool any_cl = false;
  for (const Tensor* t : inputs)
    if (t->defined() && t->suggest_memory_format() == MemoryFormat::ChannelsLast) any_cl = true;
  if (!any_cl) return;
  std::ostringstream os;
  os << "memory-format check: a channels_last input gave a 4-d output that is not channels_last"
     << " (output " << output.sizes() << "@" << output.strides() << "); inputs:";
  for (const Tensor* t : inputs)
    if (t->defined()) os << " " << t->sizes() << "@" << t->strides() << " " << t->suggest_memory_format() << ";";
  os << " convert the other inputs with .to(MemoryFormat::ChannelsLast) or report the op";
  detail::throw_error(op, os.str());
}

}  // namespace ops
}  // namespace strider
