#pragma once
// Loading a checkpoint into training state at any world size and any sharding strategy:
// each rank reads from the ranks' files only the byte ranges holding its own rows of each
// tensor (the manifest says where every row is), verifying every block it reads.
#include <string>

#include "strider/checkpoint/manifest.h"
#include "strider/checkpoint/training_state.h"
#include "strider/dist/process_group.h"

namespace strider::checkpoint {

struct LoadOptions {
  // false: the optimizer keeps fresh state (its saved state, even another optimizer's, is
  // ignored); the model, schedule and data position still load.
  bool optimizer = true;
};

struct LoadResult {
  std::string dir;    // the checkpoint loaded (a run directory resolves to its latest)
  Manifest manifest;  // its manifest
};

// Collective (pg null: one process). `path` is a checkpoint or a run directory
// (resolve_checkpoint). Every tensor of `state` must be in the checkpoint with the same
// dtype and whole shape and every tensor of the checkpoint must belong to `state` (an
// optimizer's state only when state.optimizer is set and options.optimizer). All or nothing,
// on every rank: each rank reads and verifies everything it needs before any state changes,
// and if any rank fails, every rank throws strider::Error naming that rank, the file and the
// tensor, with all state unchanged. A rank beyond the saved world size takes rank
// (rank mod saved world)'s generator state. The optimizer's moments and step counts load; its
// options (lr, betas, weight decay) and the scheduler's arguments stay as the program built them
// (PyTorch's optimizer.load_state_dict restores saved options; Optimizer::load_state_dict does).
LoadResult load(const std::string& path, const TrainingState& state, dist::ProcessGroup* pg,
                const LoadOptions& options = {});

}  // namespace strider::checkpoint
