#pragma once
// The run's in-memory snapshots (--memory-snapshot-every N): every N steps each rank's state
// goes into its host's memory and a partner's on another host (checkpoint::MemorySnapshotter),
// in a store under --memory-snapshot-dir named after --out; rank 0 records the newest one in
// --out/memory-snapshot.json, which `strider launch` reads to relaunch from it. A fresh run
// empties its stores first; a finished run removes them.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>
#include <strider/strider.h>

#include "train_options.h"

namespace strider::tools {

inline constexpr const char* kMemorySnapshotRecord = "memory-snapshot.json";

// The step of the newest in-memory snapshot recorded in run_dir, or -1 (none, or unreadable).
int64_t recorded_memory_snapshot_step(const std::string& run_dir);

class RunMemorySnapshots {
 public:
  // Collective. pg: the world (null: a single process).
  RunMemorySnapshots(const TrainOptions& options, std::shared_ptr<dist::ProcessGroup> pg,
                     const checkpoint::TrainingState& state);

  // Collective, after every optimizer step: takes a snapshot when `step` is a multiple of
  // --memory-snapshot-every (with --memory-snapshot-overlap: begins it, and commits it after the
  // next step). A snapshot that fails (on every rank alike) is reported on stderr and training
  // goes on; the previous snapshot stays the newest.
  void after_step(int64_t step);
  // Collective, for --resume of this run: the newest snapshot newer than the file checkpoint of
  // step `after_step` (-1: none) that the surviving hosts hold, assembled on every host.
  std::optional<checkpoint::RecoveredSnapshot> recover(int64_t after_step, std::string* why);
  // Collective: the run is over; the stores and the record go.
  void finish();
  // Snapshots taken, the time training waited on them (also per step trained by this process),
  // and host memory per rank.
  nlohmann::json summary() const;

 private:
  void record(int64_t step) const;
  // Runs a snapshot's collective part; a failure (alike on every rank) is reported, not thrown.
  void attempt(int64_t step, const std::function<void()>& fn);
  void took(const checkpoint::MemorySnapshotStats& stats);  // a snapshot committed

  const TrainOptions& options_;
  std::shared_ptr<dist::ProcessGroup> pg_;
  checkpoint::TrainingState state_;
  std::string store_;
  std::unique_ptr<checkpoint::MemorySnapshotter> snapshots_;
  int64_t taken_ = 0, failed_ = 0, steps_ = 0, newest_ = -1, pending_step_ = -1;
  double seconds_ = 0, max_seconds_ = 0, begin_seconds_ = 0;
  checkpoint::MemorySnapshotStats last_;
};

}  // namespace strider::tools
