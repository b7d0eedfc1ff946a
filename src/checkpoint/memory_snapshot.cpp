// Taking an in-memory snapshot: the checkpoint save's three phases (save_plan.h) with the store
// as the run directory, a copy of each rank's file to its partner between writing and
// committing, and one commit per host (every host's manifest is the same; its directory holds
// the files that host keeps).
#include "strider/checkpoint/memory_snapshot.h"

#include <chrono>
#include <filesystem>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>
#include <thread>

#include "checkpoint/commit.h"
#include "checkpoint/save_plan.h"
#include "checkpoint/snapshot_placement.h"
#include "strider/core/error.h"
#include "strider/dist/consistency.h"
#include "strider/io/sha256.h"
#include "strider/ops/factory.h"

namespace strider::checkpoint {
namespace {

using Json = nlohmann::json;
constexpr const char* kOp = "memory snapshot";

// The first non-empty outcome, as "<what> failed on rank r: <error>", or "".
std::string first_error(const std::vector<std::string>& outcomes, const char* what) {
  for (size_t r = 0; r < outcomes.size(); ++r)
    if (!outcomes[r].empty()) return std::string(what) + " failed on rank " + std::to_string(r) + ": " + outcomes[r];
  return {};
}

// Collective: rank r's file goes to rank r + offset, which writes the file of rank r - offset
// into its host's pending directory. Every rank moves the same chunks (the largest file's),
// so a failing rank still takes part; returns its error, or "".
std::string copy_to_partner(dist::ProcessGroup& pg, const detail::SavePlan& plan, const std::vector<std::string>& reports,
                            int offset, uint64_t chunk_bytes, uint64_t* received) {
  const int world = plan.world, from = (plan.rank - offset + world) % world;
  auto file_bytes = [&](int r) { return Json::parse(reports[r])["file"]["bytes"].get<uint64_t>(); };
  uint64_t largest = 0;
  for (int r = 0; r < world; ++r) largest = std::max(largest, file_bytes(r));
  const uint64_t mine = file_bytes(plan.rank), theirs = file_bytes(from);
  const std::string own_path = plan.pending + "/" + detail::rank_file_name(plan.rank, world);
  std::string error;
  std::optional<detail::ChunkFileWriter> out;
  try {
    out.emplace(plan.pending + "/" + detail::rank_file_name(from, world));
  } catch (const std::exception& e) {
    error = e.what();
  }
  const Tensor send = empty({static_cast<int64_t>(std::min(chunk_bytes, std::max<uint64_t>(largest, 1)))}, kByte);
  const Tensor recv = empty_like(send);
  dist::CollectiveLabel label("memory snapshot: copy to the partner on another host");
  for (uint64_t at = 0; at < largest; at += chunk_bytes) {
    const int64_t n = static_cast<int64_t>(std::min(chunk_bytes, largest - at));
    const Tensor s = send.narrow(0, 0, n), r = recv.narrow(0, 0, n);
    try {
      if (error.empty()) detail::read_chunk(own_path, mine, at, s);
    } catch (const std::exception& e) {
      error = e.what();
    }
    pg.shift(r, s, offset);
    try {
      if (error.empty() && at < theirs) out->write(r, std::min<uint64_t>(static_cast<uint64_t>(n), theirs - at));
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  try {
    if (error.empty()) out->finish();
  } catch (const std::exception& e) {
    error = e.what();
  }
  *received = theirs;
  return error;
}

// After the ranks agree that a snapshot failed: the host drops what it wrote (it would fill the
// store for every later snapshot), and every rank throws alike.
void fail_unless_empty(const std::string& failure, const char* consequence, bool host_lead, const std::string& store,
                       int64_t step) {
  if (failure.empty()) return;
  std::error_code ec;
  if (host_lead) std::filesystem::remove_all(detail::pending_dir(store, step), ec);
  STRIDER_CHECK(false, kOp, "step ", step, ": ", failure, consequence);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

struct MemorySnapshotter::Pending {
  detail::SavePlan plan;  // without its tensors once the file is written (only the names and manifest stay)
  std::vector<std::string> reports;
  MemorySnapshotStats stats;
  double waited = 0;       // seconds the caller spent in begin()
  std::string copy_error;  // this rank's part of the partner copy, set by the copier
  std::thread copier;
  ~Pending() {
    if (copier.joinable()) copier.join();  // its collectives must end on every rank alike
  }
};

std::string memory_snapshot_store(const std::string& root, const std::string& run_dir) {
  STRIDER_CHECK(!root.empty(), kOp, "the snapshot root directory is empty; give a tmpfs such as /dev/shm");
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::weakly_canonical(std::filesystem::absolute(run_dir), ec);
  io::Sha256 digest;
  digest.update((ec ? std::filesystem::absolute(run_dir) : abs).string());
  return root + "/strider-snapshots/" + digest.hex_digest().substr(0, 16);
}

MemorySnapshotter::MemorySnapshotter(std::string store_dir, std::shared_ptr<dist::ProcessGroup> pg,
                                     MemorySnapshotOptions options)
    : store_dir_(std::move(store_dir)), pg_(std::move(pg)), options_(options) {
  STRIDER_CHECK(pg_, kOp, "the process group is null; pass the world (a SingleProcessGroup alone)");
  detail::validate_options(store_dir_, {.keep_last = 1, .block_bytes = options_.block_bytes}, kOp);
  STRIDER_CHECK(options_.chunk_bytes >= 4096 && options_.chunk_bytes <= (uint64_t{1} << 30), kOp, "chunk_bytes ",
                options_.chunk_bytes, " is outside [4096, 1 GiB]");
  rank_ = pg_->rank();
  world_ = pg_->size();
  const detail::Placement p = detail::place_ranks(*pg_, options_.host);
  offset_ = p.offset;
  host_lead_ = p.host_lead(rank_);
  for (const std::string& h : p.hosts)
    if (h != p.hosts[0]) {
      hosts_ = 2;  // more than one, at least
      break;
    }
  for (int q : p.ranks_on(p.hosts[rank_])) {
    kept_here_.push_back(q);
    if (offset_ != 0) kept_here_.push_back((q - offset_ + world_) % world_);
  }
  // The partner copies get a process group (and comm thread) of their own, so a copy running
  // in the background (begin) does not hold training's collectives behind it.
  if (offset_ != 0) copy_pg_ = pg_->split(0, rank_);
  std::error_code ec;
  std::filesystem::create_directories(store_dir_, ec);
  const std::string error = ec ? "cannot create the snapshot store " + store_dir_ + ": " + ec.message() : "";
  const std::string failed =
      first_error(dist::all_gather_strings(*pg_, "memory snapshot: the store", error), "creating the store");
  STRIDER_CHECK(failed.empty(), kOp, failed);
}

MemorySnapshotter::~MemorySnapshotter() = default;  // ~Pending joins a copy still in flight

MemorySnapshotStats MemorySnapshotter::save(int64_t step, const TrainingState& state) {
  begin(step, state);
  return commit();
}

void MemorySnapshotter::begin(int64_t step, const TrainingState& state) {
  if (pending_) commit();
  const auto start = std::chrono::steady_clock::now();
  detail::check_save_request(step, state, pg_.get());
  // A rank's failure travels as its report, so every rank fails here alike.
  std::optional<detail::SavePlan> planned;
  std::string report;
  try {
    planned.emplace(detail::plan_save(store_dir_, step, state, rank_, world_, false));
    report = detail::write_rank_file(*planned, options_.block_bytes);
  } catch (const std::exception& e) {
    report = Json{{"ok", false}, {"error", e.what()}}.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  auto p = std::make_unique<Pending>();
  p->reports = dist::all_gather_strings(*pg_, "memory snapshot: each rank's file", report);
  fail_unless_empty(detail::first_failure(p->reports, "writing the snapshot's file"),
                    "; the previous snapshot stays the newest", host_lead_, store_dir_, step);
  p->plan = std::move(*planned);
  p->plan.live.clear();  // the file holds them now: no reference to the live tensors stays
  p->plan.pieces.clear();
  p->stats = {.step = step, .partner = partner()};
  p->stats.own_bytes = Json::parse(p->reports[rank_])["file"]["bytes"].get<uint64_t>();
  if (offset_ != 0) {
    Pending* raw = p.get();
    auto copy = [this, raw] {
      try {
        raw->copy_error = copy_to_partner(*copy_pg_, raw->plan, raw->reports, offset_, options_.chunk_bytes,
                                          &raw->stats.kept_for_partner);
      } catch (const std::exception& e) {
        raw->copy_error = e.what();
      }
    };
    try {
      raw->copier = std::thread(copy);
    } catch (const std::system_error&) {
      copy();  // no thread to be had: the copy now, so the peers' copies still meet this rank's
    }
  }
  p->waited = seconds_since(start);
  pending_ = std::move(p);
}

MemorySnapshotStats MemorySnapshotter::commit() {
  STRIDER_CHECK(pending_, kOp, "commit() with no snapshot begun; call begin(step, state) first");
  const std::unique_ptr<Pending> p = std::move(pending_);
  const auto start = std::chrono::steady_clock::now();
  if (p->copier.joinable()) p->copier.join();
  const int64_t step = p->stats.step;
  if (offset_ != 0)
    fail_unless_empty(first_error(dist::all_gather_strings(*pg_, "memory snapshot: the partners' copies", p->copy_error),
                                  "keeping a partner's copy"),
                      "; the previous snapshot stays the newest", host_lead_, store_dir_, step);
  std::string commit_error;
  if (host_lead_) {
    try {
      const Manifest m = detail::complete_manifest(p->plan, p->reports);
      detail::write_file_atomically(p->plan.pending, kManifestName, format_manifest(m));
      std::set<std::string> keep{kManifestName};
      for (int q : kept_here_) keep.insert(detail::rank_file_name(q, world_));
      detail::commit_pending(store_dir_, p->plan.pending, p->plan.final_dir, keep);
    } catch (const std::exception& e) {
      commit_error = e.what();
    }
  }
  fail_unless_empty(
      first_error(dist::all_gather_strings(*pg_, "memory snapshot: each host's commit", commit_error), "committing"),
      "; the hosts that committed hold this snapshot, the others the previous one (recovery takes the newest "
      "complete one)",
      host_lead_, store_dir_, step);
  // Every host holds `step` now: every other snapshot goes (older ones, and any newer one left by
  // an earlier incarnation of the run, which must not be found newest later).
  if (host_lead_) detail::remove_snapshots_except(store_dir_, p->plan.final_dir);
  p->stats.seconds = p->waited + seconds_since(start);
  return p->stats;
}

void MemorySnapshotter::clear() {
  pending_.reset();  // joins its copy
  dist::all_gather_strings(*pg_, "memory snapshot: clearing the stores", "");
  std::error_code ec;
  if (host_lead_) std::filesystem::remove_all(store_dir_, ec);  // best effort: the run is over
}

}  // namespace strider::checkpoint
