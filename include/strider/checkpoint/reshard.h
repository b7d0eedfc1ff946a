#pragma once
// Offline resharding (`strider ckpt reshard`): a checkpoint rewritten for another world size and
// strategy without MPI, as the ranks of that run would have written it: each parameter (and
// each optimizer moment of a parameter's shape) split by rows into ceil(rows / M)-row shards,
// one rank file per rank; buffers and other tensors whole in rank 0's file. Loading never
// depends on the layout (any checkpoint loads at any world size), so resharding is for runs
// that want each rank to read one file, and for handing checkpoints to tools that expect the
// target layout. Memory stays bounded (row_stream.h); every source byte is verified on the way.
#include <cstdint>
#include <string>

#include "strider/checkpoint/manifest.h"

namespace strider::checkpoint {

struct ReshardOptions {
  int64_t world_size = 1;
  std::string strategy{};  // "local", "ddp" or an FSDP strategy; empty keeps the source's
  uint64_t block_bytes = uint64_t{1} << 20;
};

struct ReshardReport {
  std::string source;  // the checkpoint read (a run directory resolves to its latest)
  Manifest manifest;   // of the written checkpoint
  uint64_t bytes = 0;  // written, in all files
};

// Writes the checkpoint directory `out`, which must not exist; it appears whole or not at all.
// A run's --resume accepts it at the new world size (or any other).
ReshardReport reshard_checkpoint(const std::string& source, const std::string& out, const ReshardOptions& options);

}  // namespace strider::checkpoint
