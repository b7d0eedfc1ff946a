#include "checkpoint/commit.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "strider/checkpoint/manifest.h"
#include "strider/checkpoint/run_directory.h"
#include "strider/core/error.h"

namespace strider::checkpoint::detail {
namespace {

namespace fs = std::filesystem;
constexpr const char* kOp = "checkpoint";
constexpr const char* kPendingPrefix = ".pending-";
constexpr const char* kTrashPrefix = ".trash-";

void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void remove_tree(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);  // best effort: a leftover is retried after the next save
}

}  // namespace

std::string pending_dir(const std::string& run_dir, int64_t step) {
  return run_dir + "/" + kPendingPrefix + checkpoint_dir_name(step);
}

bool has_pending_saves(const std::string& run_dir) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(run_dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->path().filename().string().rfind(kPendingPrefix, 0) == 0) return true;
  return false;
}

void write_file_atomically(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name, tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  STRIDER_CHECK(fd >= 0, kOp, "cannot write ", tmp, ": ", std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t put = ::write(fd, text.data() + done, text.size() - done);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) break;
    done += static_cast<size_t>(put);
  }
  const int err = errno;
  const bool ok = done == text.size() && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = ok ? errno : err;
    ::unlink(tmp.c_str());
    STRIDER_CHECK(false, kOp, "writing ", path, " failed: ", std::strerror(e), " (disk full?)");
  }
  fsync_dir(dir);
}

void commit_pending(const std::string& run_dir, const std::string& pending, const std::string& final_dir,
                    const std::set<std::string>& keep) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(pending, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (!keep.count(it->path().filename().string())) remove_tree(it->path());
  fsync_dir(pending);
  if (fs::exists(final_dir, ec)) {
    // A checkpoint of this step exists (a run resumed from an earlier one): swap the two at
    // once, so a crash leaves one of them committed under the name.
    if (::syscall(SYS_renameat2, AT_FDCWD, pending.c_str(), AT_FDCWD, final_dir.c_str(), RENAME_EXCHANGE) == 0) {
      fsync_dir(run_dir);
      remove_tree(pending);  // now the old checkpoint
      return;
    }
    // File systems without the exchange: move the old one aside first.
    const std::string trash = run_dir + "/" + kTrashPrefix + fs::path(final_dir).filename().string();
    remove_tree(trash);
    STRIDER_CHECK(::rename(final_dir.c_str(), trash.c_str()) == 0, kOp, "cannot move the old ", final_dir,
                  " aside: ", std::strerror(errno));
  }
  STRIDER_CHECK(::rename(pending.c_str(), final_dir.c_str()) == 0, kOp, "cannot commit ", pending, " as ", final_dir,
                ": ", std::strerror(errno));
  fsync_dir(run_dir);
}

void clean_run_directory(const std::string& run_dir, int keep_last) {
  std::error_code ec;
  const auto committed = committed_checkpoints(run_dir);
  for (auto it = fs::directory_iterator(run_dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool uncommitted = name.rfind("checkpoint-", 0) == 0 && it->is_directory() &&
                             !fs::exists(it->path() / kManifestName);  // a removal cut short
    if (name.rfind(kPendingPrefix, 0) == 0 || name.rfind(kTrashPrefix, 0) == 0 || uncommitted) remove_tree(it->path());
  }
  if (keep_last <= 0) return;
  for (size_t i = 0; i + static_cast<size_t>(keep_last) < committed.size(); ++i) {
    // The manifest goes first: a removal cut short leaves an uncommitted directory, never a
    // committed one with files missing.
    ::unlink((committed[i].dir + "/" + kManifestName).c_str());
    fsync_dir(committed[i].dir);
    remove_tree(committed[i].dir);
  }
}

}  // namespace strider::checkpoint::detail
