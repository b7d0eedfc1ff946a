#include "memory_snapshots.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace strider::tools {

int64_t recorded_memory_snapshot_step(const std::string& run_dir) {
  std::ifstream in(run_dir + "/" + kMemorySnapshotRecord);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) return -1;
  return std::max<int64_t>(-1, j["step"].get<int64_t>());
}

RunMemorySnapshots::RunMemorySnapshots(const TrainOptions& o, std::shared_ptr<dist::ProcessGroup> pg,
                                       const checkpoint::TrainingState& state)
    : options_(o),
      pg_(pg ? std::move(pg) : std::make_shared<dist::SingleProcessGroup>()),
      state_(state),
      store_(checkpoint::memory_snapshot_store(o.memory_snapshot_dir, o.out_dir)) {
  std::error_code ec;
  STRIDER_CHECK(std::filesystem::is_directory(o.memory_snapshot_dir, ec), "train", "--memory-snapshot-dir '",
                o.memory_snapshot_dir, "' is not a directory; give a tmpfs every host has, such as /dev/shm");
  snapshots_ = std::make_unique<checkpoint::MemorySnapshotter>(store_, pg_);
  if (o.resume.empty()) snapshots_->clear();  // a fresh run: nothing of an earlier one may be found newest
  if (pg_->rank() == 0 && snapshots_->partner() < 0 && snapshots_->spread_over_hosts())
    std::cerr << "strider train: the hosts run different numbers of ranks, so no rank's in-memory snapshot can "
                 "have a copy on another host: a lost host loses the snapshot (a killed rank does not); place "
                 "the same number of ranks on every host\n";
}

void RunMemorySnapshots::after_step(int64_t step) {
  ++steps_;
  // Overlapped: the snapshot begun a step ago, its copy travelled while this step trained.
  if (snapshots_->pending()) attempt(pending_step_, [&] { took(snapshots_->commit()); });
  if (step % options_.memory_snapshot_every != 0) return;
  if (!options_.memory_snapshot_overlap) {
    attempt(step, [&] { took(snapshots_->save(step, state_)); });
    return;
  }
  pending_step_ = step;
  const auto start = std::chrono::steady_clock::now();
  attempt(step, [&] { snapshots_->begin(step, state_); });
  begin_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void RunMemorySnapshots::attempt(int64_t step, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    // Every rank threw the same error at the same point, and the previous snapshot is whole:
    // training goes on without this one (a full store, say), saying so.
    ++failed_;
    if (pg_->rank() == 0)
      std::cerr << "strider train: the in-memory snapshot of step " << step << " failed, training goes on ("
                << (newest_ >= 0 ? "the newest snapshot is step " + std::to_string(newest_) : "no snapshot yet")
                << "): " << e.what() << "\n";
  }
}

void RunMemorySnapshots::took(const checkpoint::MemorySnapshotStats& s) {
  last_ = s;
  newest_ = s.step;
  ++taken_;
  seconds_ += s.seconds;
  // Overlapped, the wait is split over two steps (begin, then commit): the larger part is the stall.
  max_seconds_ = std::max(max_seconds_, options_.memory_snapshot_overlap ? std::max(begin_seconds_, s.seconds - begin_seconds_)
                                                                         : s.seconds);
  record(s.step);
}

std::optional<checkpoint::RecoveredSnapshot> RunMemorySnapshots::recover(int64_t after_step, std::string* why) {
  return checkpoint::recover_memory_snapshot(store_, *pg_, after_step, {}, why);
}

void RunMemorySnapshots::finish() {
  snapshots_->clear();
  std::error_code ec;  // rank 0 only, between collectives: nothing may throw here
  if (pg_->rank() == 0) std::filesystem::remove(options_.out_dir + "/" + kMemorySnapshotRecord, ec);
}

// Rank 0 only, through a temporary and a rename (the launcher may read it at any moment). It
// runs between collectives on one rank, so a failure is reported, never thrown: without the
// record a relaunch resumes from the checkpoint files instead.
void RunMemorySnapshots::record(int64_t step) const {
  if (pg_->rank() != 0) return;
  const std::string path = options_.out_dir + "/" + kMemorySnapshotRecord, tmp = path + ".tmp";
  bool written = false;
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << nlohmann::json{{"step", step}, {"world_size", pg_->size()}, {"store", store_}}.dump() << "\n";
    written = out.good();
  }
  if (written && ::rename(tmp.c_str(), path.c_str()) == 0) return;
  std::cerr << "strider train: cannot record the in-memory snapshot of step " << step << " in " << path
            << ": a relaunch will resume from the checkpoint files\n";
}

nlohmann::json RunMemorySnapshots::summary() const {
  return {{"every", options_.memory_snapshot_every},
          {"overlap", options_.memory_snapshot_overlap},
          {"taken", taken_},
          {"failed", failed_},
          {"stall_seconds", seconds_},
          {"max_stall_seconds", max_seconds_},
          {"stall_seconds_per_step", steps_ > 0 ? seconds_ / static_cast<double>(steps_) : 0.0},
          {"partner", last_.partner},
          {"own_bytes", last_.own_bytes},
          {"kept_for_partner_bytes", last_.kept_for_partner},
          {"host_bytes_per_rank", last_.own_bytes + last_.kept_for_partner}};
}

}  // namespace strider::tools
