#pragma once
// Where in-memory snapshots live (memory_snapshot.h): which ranks share a host (and so a store),
// which rank of a host commits its store, which partner keeps each rank's copy, and the byte
// copies between a store's files and the chunks that travel between ranks.
#include <cstdint>
#include <string>
#include <vector>

#include "strider/core/tensor.h"
#include "strider/dist/process_group.h"

namespace strider::checkpoint::detail {

struct Placement {
  std::vector<std::string> hosts;  // per rank
  int offset = 0;                  // rank r's copy goes to rank (r + offset) mod world; 0: one host
  bool host_lead(int rank) const;  // the lowest rank of its host
  std::vector<int> ranks_on(const std::string& host) const;
};

// Collective: every rank's host (`host`, or gethostname() when empty) and the smallest offset
// that puts every rank's partner on another host.
Placement place_ranks(dist::ProcessGroup& pg, const std::string& host);

// Removes every committed snapshot in `store` but the one in directory `keep` ("": all), and the
// pending directories and temporaries of saves cut short. Best effort: a leftover goes next time.
void remove_snapshots_except(const std::string& store, const std::string& keep);

// Bytes [offset, offset + into.numel()) of the file at `path` (`size` bytes long) into `into`
// (uint8), zero past its end.
void read_chunk(const std::string& path, uint64_t size, uint64_t offset, const Tensor& into);

// Streams chunks into `path` through a temporary; finish() fsyncs and renames it into place.
class ChunkFileWriter {
 public:
  explicit ChunkFileWriter(std::string path);
  ~ChunkFileWriter();
  ChunkFileWriter(const ChunkFileWriter&) = delete;
  ChunkFileWriter& operator=(const ChunkFileWriter&) = delete;
  // The first `bytes` bytes of `chunk` (uint8).
  void write(const Tensor& chunk, uint64_t bytes);
  void finish();

 private:
  std::string path_, tmp_;
  int fd_ = -1;
};

}  // namespace strider::checkpoint::detail
