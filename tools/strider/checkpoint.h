#pragma once
// The trainer's checkpoints: one safetensors file per rank with the model's (or this rank's
// shards') tensors under "model.", the optimizer's state under "optim.", and what a resume must
// match in the metadata. Loading is all or nothing: every field and tensor is checked against
// the running model and optimizer before anything is copied.
#include <cstdint>
#include <string>

#include <strider/strider.h>

namespace strider::tools {

struct CheckpointInfo {
  std::string model;      // the model's signature, e.g. "gpt(n_layer=2,...)"
  std::string layout;     // "local" or "full_shard, rank 0 of 2"
  std::string optimizer;  // Optimizer::name()
  int64_t epoch = 0;      // epochs completed
  int64_t optimizer_steps = 0;
};

void save_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer& opt, const CheckpointInfo& info);

// Reads `path` (which must carry strider's checksum) into `model` and `opt`. The file must
// match `expect`'s model, layout and optimizer; every model tensor must exist with the model's
// exact shape and dtype; the optimizer state must be complete and finite (Optimizer::load_state).
// reset_optimizer: ignore the saved optimizer state and start with fresh moments and step 0.
// Returns the file's info; throws strider::Error naming the file and tensor otherwise, with
// model and optimizer unchanged.
CheckpointInfo load_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer& opt,
                               const CheckpointInfo& expect, bool reset_optimizer);

// The info only (validated like load_checkpoint's), for comparing a set of rank files.
CheckpointInfo read_checkpoint_info(const io::SafetensorsFile& file, const std::string& path);

}  // namespace strider::tools
