#include "strider/checkpoint/run_directory.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>

#include "checkpoint/commit.h"
#include "strider/checkpoint/manifest.h"
#include "strider/core/error.h"

namespace strider::checkpoint {
namespace {

namespace fs = std::filesystem;
constexpr const char* kPrefix = "checkpoint-";

// The step of a "checkpoint-<digits>" name, or -1.
int64_t step_of(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0) return -1;
  const std::string digits = name.substr(std::string(kPrefix).size());
  int64_t v = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  return !digits.empty() && ec == std::errc() && end == digits.data() + digits.size() && v >= 0 ? v : -1;
}

}  // namespace

std::string checkpoint_dir_name(int64_t step) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s%09lld", kPrefix, static_cast<long long>(step));
  return buf;
}

std::vector<CommittedCheckpoint> committed_checkpoints(const std::string& run_dir) {
  std::vector<CommittedCheckpoint> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(run_dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const int64_t step = step_of(it->path().filename().string());
    std::error_code e2;
    if (step >= 0 && fs::is_regular_file(it->path() / kManifestName, e2)) out.push_back({step, it->path().string()});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  return out;
}

std::string resolve_checkpoint(const std::string& path) {
  std::error_code ec;
  STRIDER_CHECK(fs::is_directory(path, ec), "checkpoint", "'", path, "' is not a directory",
                fs::exists(path, ec) ? " (a checkpoint is a directory holding manifest.json)" : " (it does not exist)");
  if (fs::exists(fs::path(path) / kManifestName, ec)) return path;
  const auto all = committed_checkpoints(path);
  if (!all.empty()) return all.back().dir;
  const bool pending = detail::has_pending_saves(path);
  STRIDER_CHECK(false, "checkpoint", "'", path, "' holds no committed checkpoint: it is neither a checkpoint (no ",
                kManifestName, ") nor a run directory with a ", kPrefix, "<step>/", kManifestName,
                pending ? " (only saves that never finished)" : "", "; pass a run's --out directory or one of its ",
                kPrefix, "<step> directories");
  return {};
}

}  // namespace strider::checkpoint
