#pragma once
// The disk's sequential bandwidth, measured in the benchmark's own run: write a scratch file in
// the offload directory with O_DIRECT (past the page cache), sync it, read it back the same way.
// Also this process's storage traffic from /proc/self/io (bytes it made the kernel read from
// or dirty for the disk), to count what a step moves.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace strider::bench {

struct DiskBandwidth {
  double write_gbps = 0, read_gbps = 0;
};

inline DiskBandwidth measure_disk_bandwidth(const std::string& directory, long long bytes) {
  constexpr long long kChunk = 4 << 20;
  DiskBandwidth out;
  std::string path = directory + "/strider-disk-bench-XXXXXX";
  const int tmp = mkstemp(path.data());
  if (tmp < 0) return out;
  close(tmp);
  void* buf = nullptr;
  if (posix_memalign(&buf, 4096, kChunk) != 0) return out;
  std::memset(buf, 0x5a, kChunk);
  using clock = std::chrono::steady_clock;
  int fd = open(path.c_str(), O_WRONLY | O_DIRECT);
  if (fd >= 0) {
    const auto t0 = clock::now();
    long long done = 0;
    while (done < bytes && write(fd, buf, kChunk) == kChunk) done += kChunk;
    fdatasync(fd);
    out.write_gbps = static_cast<double>(done) / std::chrono::duration<double>(clock::now() - t0).count() / 1e9;
    close(fd);
  }
  fd = open(path.c_str(), O_RDONLY | O_DIRECT);
  if (fd >= 0) {
    const auto t0 = clock::now();
    long long done = 0;
    while (read(fd, buf, kChunk) == kChunk) done += kChunk;
    out.read_gbps = static_cast<double>(done) / std::chrono::duration<double>(clock::now() - t0).count() / 1e9;
    close(fd);
  }
  unlink(path.c_str());
  std::free(buf);
  return out;
}

// "read_bytes" or "write_bytes" of /proc/self/io.
inline double process_io_bytes(const std::string& field) {
  std::ifstream io("/proc/self/io");
  for (std::string line; std::getline(io, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1));
  return 0;
}

}  // namespace strider::bench
