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
#include "strider/io/file_io.h"

namespace strider::checkpoint::detail {
namespace {

namespace fs = std::filesystem;
constexpr const char* kOp = "checkpoint";
constexpr const char* kPendingPrefix = ".pending-";
constexpr const char* kTrashPrefix = ".trash-";

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
  const std::string path = dir + "/" + name, tmp = io::temporary_path(path);
  try {
    io::File f(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    STRIDER_CHECK(f.is_open(), kOp, "cannot write ", tmp, ": ", std::strerror(errno));
    io::write_exact(f.fd(), text.data(), text.size(), tmp, kOp);
    STRIDER_CHECK(::fsync(f.fd()) == 0, kOp, "writing ", tmp, " failed: ", std::strerror(errno), " (disk full?)");
    f.close();
    STRIDER_CHECK(::rename(tmp.c_str(), path.c_str()) == 0, kOp, "cannot move ", tmp, " to ", path, ": ",
                  std::strerror(errno));
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  io::fsync_directory(dir);
}

void commit_pending(const std::string& run_dir, const std::string& pending, const std::string& final_dir,
                    const std::set<std::string>& keep) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(pending, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (!keep.count(it->path().filename().string())) remove_tree(it->path());
  io::fsync_directory(pending);
  if (fs::exists(final_dir, ec)) {
    // A checkpoint of this step exists (a run resumed from an earlier one): swap the two at
    // once, so a crash leaves one of them committed under the name.
    if (::syscall(SYS_renameat2, AT_FDCWD, pending.c_str(), AT_FDCWD, final_dir.c_str(), RENAME_EXCHANGE) == 0) {
      io::fsync_directory(run_dir);
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
  io::fsync_directory(run_dir);
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
    io::fsync_directory(committed[i].dir);
    remove_tree(committed[i].dir);
  }
}

}  // namespace strider::checkpoint::detail
