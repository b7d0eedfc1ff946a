#include "strider/ops/check_mode.h"

#include <atomic>
#include <sstream>

#include "strider/core/context.h"

namespace strider {
namespace {
std::atomic<bool>& check_flag() { return Context::process().memory_format_check; }
}  // namespace

void set_memory_format_check(bool on) { check_flag() = on; }
bool memory_format_check_enabled() { return check_flag(); }
MemoryFormatCheckGuard::MemoryFormatCheckGuard(bool on) : saved_(check_flag()) { check_flag() = on; }
MemoryFormatCheckGuard::~MemoryFormatCheckGuard() { check_flag() = saved_; }

namespace ops {

void check_memory_format_kept(const char* op, std::initializer_list<const Tensor*> inputs,
                              const Tensor& output) {
  if (!check_flag().load(std::memory_order_relaxed)) [[likely]] return;
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
