#include "launcher_env.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace strider::tools {
namespace {

std::optional<int64_t> first_number(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* v = std::getenv(name);
    if (v == nullptr) continue;
    int64_t n = 0;
    const char* end = v + std::strlen(v);
    if (auto [p, ec] = std::from_chars(v, end, n); ec == std::errc() && p == end && n >= 0) return n;
  }
  return std::nullopt;
}

}  // namespace

LauncherProcess launcher_process() {
  LauncherProcess p;
  // SLURM_STEP_NUM_TASKS, not SLURM_NTASKS: a batch script's own shell sees the allocation's
  // task count but is one process.
  p.rank = first_number({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}).value_or(0);
  p.world = std::max<int64_t>(1, first_number({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"}).value_or(1));
  return p;
}

}  // namespace strider::tools
