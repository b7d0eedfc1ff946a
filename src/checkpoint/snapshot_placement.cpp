#include "checkpoint/snapshot_placement.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "checkpoint/commit.h"
#include "strider/checkpoint/manifest.h"
#include "strider/checkpoint/run_directory.h"
#include "strider/core/error.h"
#include "strider/dist/consistency.h"
#include "strider/io/file_io.h"

namespace strider::checkpoint::detail {
namespace {

constexpr const char* kOp = "memory snapshot";

std::string this_host() {
  char name[256] = {};
  STRIDER_CHECK(::gethostname(name, sizeof name - 1) == 0, kOp, "gethostname failed: ", std::strerror(errno));
  return name;
}

}  // namespace

bool Placement::host_lead(int rank) const {
  for (int q = 0; q < rank; ++q)
    if (hosts[q] == hosts[rank]) return false;
  return true;
}

std::vector<int> Placement::ranks_on(const std::string& host) const {
  std::vector<int> out;
  for (int q = 0; q < static_cast<int>(hosts.size()); ++q)
    if (hosts[q] == host) out.push_back(q);
  return out;
}

Placement place_ranks(dist::ProcessGroup& pg, const std::string& host) {
  Placement p;
  p.hosts = dist::all_gather_strings(pg, "memory snapshot: each rank's host", host.empty() ? this_host() : host);
  const int world = static_cast<int>(p.hosts.size());
  for (int k = 1; k < world && p.offset == 0; ++k) {
    bool all_elsewhere = true;
    for (int r = 0; r < world && all_elsewhere; ++r) all_elsewhere = p.hosts[(r + k) % world] != p.hosts[r];
    if (all_elsewhere) p.offset = k;
  }
  return p;
}

void remove_snapshots_except(const std::string& store, const std::string& keep) {
  clean_run_directory(store, 0);  // pending saves and temporaries; every committed one stays
  for (const CommittedCheckpoint& c : committed_checkpoints(store)) {
    if (c.dir == keep) continue;
    std::error_code ec;
    std::filesystem::remove(c.dir + "/" + kManifestName, ec);  // first: a removal cut short is not committed
    std::filesystem::remove_all(c.dir, ec);
  }
}

void read_chunk(const std::string& path, uint64_t size, uint64_t offset, const Tensor& into) {
  const uint64_t n = static_cast<uint64_t>(into.numel());
  const uint64_t have = offset < size ? std::min(n, size - offset) : 0;
  auto* dst = static_cast<char*>(into.data());
  if (have > 0) {
    io::File f(path, O_RDONLY);
    STRIDER_CHECK(f.is_open(), kOp, "cannot open ", path, ": ", std::strerror(errno));
    io::read_exact(f.fd(), dst, have, offset, path, kOp);
  }
  std::memset(dst + have, 0, n - have);
}

ChunkFileWriter::ChunkFileWriter(std::string path) : path_(std::move(path)), tmp_(io::temporary_path(path_)) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  STRIDER_CHECK(fd_ >= 0, kOp, "cannot write ", tmp_, ": ", std::strerror(errno));
}

ChunkFileWriter::~ChunkFileWriter() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(tmp_.c_str());
}

void ChunkFileWriter::write(const Tensor& chunk, uint64_t bytes) {
  STRIDER_CHECK(bytes <= static_cast<uint64_t>(chunk.numel()), kOp, "internal: writing ", bytes, " bytes of a ",
                chunk.numel(), "-byte chunk");
  io::write_exact(fd_, chunk.data(), bytes, tmp_, kOp);
}

void ChunkFileWriter::finish() {
  STRIDER_CHECK(::fsync(fd_) == 0, kOp, "writing ", tmp_, " failed: ", std::strerror(errno), " (is the store full?)");
  ::close(fd_);
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) == 0) return;
  const int err = errno;
  ::unlink(tmp_.c_str());
  STRIDER_CHECK(false, kOp, "cannot move ", tmp_, " to ", path_, ": ", std::strerror(err));
}

}  // namespace strider::checkpoint::detail
