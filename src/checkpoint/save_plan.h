#pragma once
// A save in three phases, shared by the blocking Checkpointer and the AsyncCheckpointer:
//   plan_save         (every rank, when save() is called) what to write, and everything that is
//                     not a tensor read from the training state right then;
//   write_rank_file   (any thread) this rank's file in the pending directory;
//   commit_save       (collective) rank 0 writes the manifest and renames the directory.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "checkpoint/holdings.h"
#include "strider/checkpoint/checkpointer.h"
#include "strider/checkpoint/manifest.h"
#include "strider/checkpoint/training_state.h"
#include "strider/dist/process_group.h"

namespace strider::checkpoint::detail {

struct SavePlan {
  int rank = 0, world = 1;
  std::string run_dir, pending, final_dir;
  // All but files, shards and RNG states (filled from the ranks' reports at commit).
  Manifest manifest;
  std::vector<Piece> pieces;  // this rank's rows of each tensor, in file order
  std::string rng;            // this rank's generator state ("" when not saved)
  // Pieces read from the live tensors (parameters and their optimizer moments, which only
  // optimizer.step() changes), with their storages' generations when planned.
  struct Live {
    std::string key;
    Tensor rows;
    uint64_t generation = 0;
  };
  std::vector<Live> live;
};

void validate_options(const std::string& run_dir, const CheckpointOptions& options, const char* who);
// Collective: the model is there, the step is valid and the same on every rank.
void check_save_request(int64_t step, const TrainingState& state, dist::ProcessGroup* pg);

// `snapshot_all_but_optimized`: copy every tensor except parameters and their moments now
// (buffers change in forward), so the live ones can be written while training goes on.
SavePlan plan_save(const std::string& run_dir, int64_t step, const TrainingState& state, int rank, int world,
                   bool snapshot_all_but_optimized);

// Writes this rank's file; never throws. The report (one line of JSON) carries the file's
// record and each piece's place, or the error. `data_read` runs once every live byte was read.
std::string write_rank_file(const SavePlan& plan, uint64_t block_bytes, const std::function<void()>& data_read = {});

// The first failure among the ranks' outcomes (one JSON report each, "" counts as success), or
// "": "<what> failed on rank r: <its error>".
std::string first_failure(const std::vector<std::string>& outcomes, const char* what);
// The plan's manifest completed from every rank's report of the file it wrote (any rank's plan:
// all but the files, shards and RNG states is the same on every rank).
Manifest complete_manifest(const SavePlan& plan, const std::vector<std::string>& reports);

// Collective over pg (null: one process). Throws on every rank, naming the rank and cause, if
// any rank's report is a failure or the commit fails; returns the committed directory.
std::string commit_save(const SavePlan& plan, dist::ProcessGroup* pg, const std::string& report, int keep_last);

// The first live piece whose storage was written since it was planned, or "".
std::string changed_since_planned(const SavePlan& plan);

}  // namespace strider::checkpoint::detail
