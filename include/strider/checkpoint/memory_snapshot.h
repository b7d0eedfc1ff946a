#pragma once
// In-memory snapshots: no lost work when a rank or a whole host is lost. Every N steps each
// rank writes its distributed-checkpoint file (checkpointer.h: its rows of every tensor, its
// generator, the data position; checksummed) into its host's memory, a store on a tmpfs such
// as /dev/shm, which outlives the process (a killed trainer's snapshot stays for its
// relaunch), and hands a copy to a partner rank on another host, which keeps it in that host's
// memory too. After a failure the relaunched ranks, at any world size, find the newest snapshot
// whose every file some surviving host still holds, pass each host the files it lacks, and
// load it like a checkpoint (load.h): the run goes on from at most N steps back, reading no disk.
//
//   checkpoint::MemorySnapshotter snapshots(store_dir, pg);
//   if (step % N == 0) snapshots.save(step, state);   // collective
//   ...after a relaunch (collective over the new world):
//   if (auto s = checkpoint::recover_memory_snapshot(store_dir, *pg, latest_file_step))
//     checkpoint::load(s->dir, state, pg.get());
//
// Host memory per rank: its own file and the partner's it keeps (about twice the rank's
// parameters and optimizer state), twice that while a snapshot is taken (the previous one stays
// until every host has committed the new one). A snapshot is lost only when a rank's host and
// its partner's host are both lost; recovery then says so and the run resumes from its files.
//
// Overlapped with training: begin() writes this rank's file and returns while the copy to the
// partner travels in the background (on a process group of its own, split from pg, so training's
// collectives do not queue behind it); commit() at a later step waits for what is left of the
// copy and commits. Until then the previous snapshot is the newest, so a failure in between
// redoes the steps since that one (N plus the steps between begin and commit).
//
//   if (snapshots.pending()) snapshots.commit();       // collective: the one begun a step ago
//   if (step % N == 0) snapshots.begin(step, state);   // collective: the stall is the local write
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "strider/checkpoint/training_state.h"
#include "strider/dist/process_group.h"

namespace strider::checkpoint {

struct MemorySnapshotOptions {
  // This rank's host: ranks that give the same name share its store. "" = gethostname().
  std::string host{};
  uint64_t block_bytes = uint64_t{1} << 20;  // checksum granularity (as CheckpointOptions)
  uint64_t chunk_bytes = uint64_t{64} << 20;  // a copy travels to its partner in pieces of this size
};

struct MemorySnapshotStats {
  int64_t step = -1;
  int partner = -1;                 // the rank keeping this rank's copy (-1: none, see partner())
  uint64_t own_bytes = 0;           // this rank's file
  uint64_t kept_for_partner = 0;    // the file this rank received and keeps for its partner
  double seconds = 0;               // the caller's wait: the whole save(), or begin() plus commit()
};

class MemorySnapshotter {
 public:
  // Collective over pg. store_dir: this host's store (created if missing); ranks of one host
  // must pass the same directory, ranks of different hosts may (each host has its own tmpfs).
  MemorySnapshotter(std::string store_dir, std::shared_ptr<dist::ProcessGroup> pg, MemorySnapshotOptions options = {});

  // Collective: every rank, the same step. On return every host holds the snapshot of `step`
  // and no other; throws strider::Error on every rank alike (naming the rank and the cause) if
  // any rank failed: before the commit the previous snapshot stays the newest, and each host drops
  // what this one wrote; if a host's commit fails, the hosts that committed hold this snapshot and
  // the others the previous one (recovery takes the newest complete one).
  MemorySnapshotStats save(int64_t step, const TrainingState& state);
  // save() in two halves, the copy to the partner between them running in the background.
  // begin: collective; writes this rank's file and starts the copy (a snapshot still pending is
  // committed first); throws like save() if a rank's file failed. commit: collective; waits for
  // the copy and commits, throwing like save(); returns the stats of the whole snapshot (seconds:
  // the time training waited in begin and commit, not the copy's).
  void begin(int64_t step, const TrainingState& state);
  MemorySnapshotStats commit();
  bool pending() const { return pending_ != nullptr; }
  // Joins a copy still in flight (its snapshot stays uncommitted: the previous one is the newest).
  ~MemorySnapshotter();
  MemorySnapshotter(const MemorySnapshotter&) = delete;
  MemorySnapshotter& operator=(const MemorySnapshotter&) = delete;

  // Collective: removes every snapshot from every host's store (the run finished), a pending
  // one included (its copy is waited for, not committed).
  void clear();

  // The rank that keeps this rank's copy: the nearest rank ahead whose offset puts every rank's
  // partner on another host (mpirun's by-slot placement: ranks_per_host ahead). -1 when no offset
  // does: on one host, or on hosts running different numbers of ranks (then spread_over_hosts()
  // is true, and losing a host loses the snapshot: each host keeps only its own ranks' files).
  int partner() const { return offset_ == 0 ? -1 : (rank_ + offset_) % world_; }
  bool spread_over_hosts() const { return hosts_ > 1; }
  const std::string& store_dir() const { return store_dir_; }

 private:
  std::string store_dir_;
  std::shared_ptr<dist::ProcessGroup> pg_;
  MemorySnapshotOptions options_;
  int rank_ = 0, world_ = 1, offset_ = 0, hosts_ = 1;
  bool host_lead_ = true;  // the lowest rank of its host: writes the manifest and commits
  std::vector<int> kept_here_;  // the ranks whose files this host keeps (its own and partners')
  std::shared_ptr<dist::ProcessGroup> copy_pg_;  // split from pg_ for the partner copies (when there is a partner)
  struct Pending;
  std::unique_ptr<Pending> pending_;  // begun, not committed
};

struct RecoveredSnapshot {
  int64_t step = 0;
  int saved_world = 0;
  std::string dir;              // this host's copy, complete: pass it to checkpoint::load
  uint64_t bytes_received = 0;  // file bytes this rank received from other hosts
};

// Collective over the relaunched world (any size): the newest snapshot newer than `after_step`
// (the latest file checkpoint's step, or -1) whose every file some rank's host holds. Each host
// receives the files it lacks; the result names this host's complete copy. nullopt when no such
// snapshot exists; `why` (if given) then says what is missing ("rank 3's file of step 40 is on
// no surviving host").
std::optional<RecoveredSnapshot> recover_memory_snapshot(const std::string& store_dir, dist::ProcessGroup& pg,
                                                         int64_t after_step, const MemorySnapshotOptions& options = {},
                                                         std::string* why = nullptr);

// The store a run keeps its snapshots in: root/strider-snapshots/<a digest of run_dir's absolute
// path>, so runs on one host never share one.
std::string memory_snapshot_store(const std::string& root, const std::string& run_dir);

}  // namespace strider::checkpoint
