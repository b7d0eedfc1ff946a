#include "strider/io/file_io.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "strider/core/error.h"

namespace strider::io {

File::File(const std::string& path, int flags, mode_t mode) : fd_(::open(path.c_str(), flags | O_CLOEXEC, mode)) {}

File::~File() { close(); }

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

void File::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void read_exact(int fd, void* dst, size_t n, uint64_t offset, const std::string& path, const char* op) {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, std::min<size_t>(n, size_t{1} << 30), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    STRIDER_CHECK(got > 0, op, path, ": read failed at byte ", offset, ": ",
                  got == 0 ? "unexpected end of file" : std::strerror(errno));
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
}

const char* file_type_name(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "of an unknown file type";
}

void write_exact(int fd, const void* src, size_t n, const std::string& path, const char* op) {
  const auto* p = static_cast<const char*>(src);
  while (n > 0) {
    const ssize_t put = ::write(fd, p, std::min<size_t>(n, size_t{1} << 30));
    if (put < 0 && errno == EINTR) continue;
    STRIDER_CHECK(put > 0, op, "writing ", path, " failed: ", put < 0 ? std::strerror(errno) : "no progress",
                  " (disk full?)");
    p += put;
    n -= static_cast<size_t>(put);
  }
}

void fsync_directory(const std::string& dir) {
  File d(dir, O_RDONLY | O_DIRECTORY);
  if (d.is_open()) ::fsync(d.fd());
}

std::string parent_directory(const std::string& path) {
  const std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : ".";
}

std::string temporary_path(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

void remove_stale_temporaries(const std::string& path) {
  const std::string prefix = std::filesystem::path(path).filename().string() + ".tmp.";
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(parent_directory(path), ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) std::filesystem::remove(it->path(), ec);
  }
}

}  // namespace strider::io
