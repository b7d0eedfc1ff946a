#pragma once
// A run directory holds a run's checkpoints, one directory each: checkpoint-<step>/ with the
// ranks' files and manifest.json. A save writes into .pending-checkpoint-<step>/ and becomes
// checkpoint-<step>/ by one rename once its manifest is written, so a directory named
// checkpoint-<step> with a manifest is always complete; the latest committed checkpoint is the
// one with the highest step. Anything else (pending directories and temporaries of killed
// saves, checkpoints beyond the newest K) is removed after the next successful save.
#include <cstdint>
#include <string>
#include <vector>

namespace strider::checkpoint {

struct CommittedCheckpoint {
  int64_t step = 0;
  std::string dir;
};

// "checkpoint-000000120"
std::string checkpoint_dir_name(int64_t step);
// The committed checkpoints under run_dir, oldest first (a missing run_dir has none).
std::vector<CommittedCheckpoint> committed_checkpoints(const std::string& run_dir);
// What `path` means wherever a checkpoint is expected: a directory holding a manifest is that
// checkpoint; a run directory means its latest committed checkpoint. Throws strider::Error
// naming the path and what it holds otherwise.
std::string resolve_checkpoint(const std::string& path);

}  // namespace strider::checkpoint
