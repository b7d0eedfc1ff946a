#pragma once
// Consolidation (`strider ckpt consolidate`): a checkpoint's model as one safetensors file of
// whole tensors under the model's own names ("blocks.0.attn.weight", no "model/" prefix), for
// PyTorch, Hugging Face or any safetensors reader, and for strider's nn::Module::load_state_dict.
// Streamed shard by shard in bounded memory, every source byte verified; the output carries
// strider's whole-file checksum and appears only when complete.
#include <cstdint>
#include <string>

namespace strider::checkpoint {

struct ConsolidateReport {
  std::string source;  // the checkpoint read (a run directory resolves to its latest)
  int64_t step = 0;
  int64_t tensors = 0;
  uint64_t bytes = 0;  // of the written file
};

ConsolidateReport consolidate_checkpoint(const std::string& source, const std::string& out_file);

}  // namespace strider::checkpoint
