#pragma once
// `strider ckpt ...`: checkpoints offline, without MPI. Each PATH may be a checkpoint directory
// or a run directory (its latest committed checkpoint).
//   inspect PATH                         what a checkpoint holds (manifest only; fast)
//   verify PATH...                       every byte of every file against its checksums
//   reshard PATH OUT --world-size M      the checkpoint rewritten for M ranks (and --strategy)
//   consolidate PATH OUT.safetensors     the model's whole tensors in one file
#include <cstdint>
#include <string>
#include <vector>

namespace strider::tools {

int ckpt_inspect(const std::string& path, bool json);
int ckpt_verify(const std::vector<std::string>& paths);
int ckpt_reshard(const std::string& path, const std::string& out, int64_t world_size, const std::string& strategy);
int ckpt_consolidate(const std::string& path, const std::string& out);

}  // namespace strider::tools
