#pragma once
// A full save (PyTorch FSDP's FULL_STATE_DICT, without its memory cost): the model as one
// safetensors file of whole tensors under the model's own names, written by rank 0 while the
// ranks stream their rows to it a bounded piece at a time. No rank ever holds more than its own
// shards plus one piece (FullSaveOptions::piece_bytes, or one row), so a model that never exists whole on any
// rank can still be exported whole. The file is the one `strider ckpt consolidate` writes from
// a sharded checkpoint of the same state, byte for byte.
//
//   checkpoint::save_full("gpt.safetensors", *fsdp_model, step, pg.get());  // every rank
//
// For export (inference, PyTorch, another framework): it holds parameters and buffers only.
// Resuming training needs the optimizer, scheduler, RNG and data position: use Checkpointer.
#include <cstdint>
#include <string>

#include "strider/dist/process_group.h"
#include "strider/nn/module.h"

namespace strider::checkpoint {

struct FullSaveOptions {
  uint64_t piece_bytes = uint64_t{32} << 20;  // rows sent to rank 0 at once (at least one row)
};

struct FullSaveReport {
  std::string file;
  int64_t tensors = 0;
  uint64_t bytes = 0;       // of the written file
  uint64_t max_piece_bytes = 0;  // the largest piece any rank held for the transfer
};

// Collective over `pg` (null: a single process). `model` is a plain module, a
// DistributedDataParallel or a FullyShardedDataParallel under any strategy. Throws
// strider::Error on every rank if any rank failed (a write error on rank 0, ranks whose models
// differ); the file then does not exist.
FullSaveReport save_full(const std::string& out_file, nn::Module& model, int64_t step, dist::ProcessGroup* pg,
                         FullSaveOptions options = {});

}  // namespace strider::checkpoint
