#pragma once
// The POSIX file plumbing every writer and reader of strider's files shares: a descriptor that
// closes itself, reads and writes that finish (short counts and EINTR retried), directory fsync,
// and cleanup of temporaries left by killed writers. Errors name the path and the system's cause.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>

namespace strider::io {

class File {
 public:
  File() = default;
  File(const std::string& path, int flags, mode_t mode = 0);
  ~File();
  File(File&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  File& operator=(File&& o) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  int fd() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }
  void close();

 private:
  int fd_ = -1;
};

// Reads exactly n bytes at `offset`; throws strider::Error naming `path` (and `op`) on a short
// file or a failed read.
void read_exact(int fd, void* dst, size_t n, uint64_t offset, const std::string& path, const char* op);
// What `mode` (stat's st_mode) makes a path: "a regular file", "a directory", "a FIFO", "a
// character device", ...; errors about a path that must be a regular file say what it is instead.
const char* file_type_name(mode_t mode);
// Appends exactly n bytes; throws naming `path` (a full disk says so).
void write_exact(int fd, const void* src, size_t n, const std::string& path, const char* op);
// Makes a rename or unlink in `dir` durable (best effort: some filesystems refuse directory fsync).
void fsync_directory(const std::string& dir);
// The directory holding `path` ("." for a bare name).
std::string parent_directory(const std::string& path);
// `<path>.tmp.<pid>`, the temporary a writer of `path` renames into place.
std::string temporary_path(const std::string& path);
// Removes temporaries of `path` left by writers that no longer run (killed mid-save); a live
// process's temporary is left alone.
void remove_stale_temporaries(const std::string& path);

}  // namespace strider::io
