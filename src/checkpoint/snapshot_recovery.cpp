// Recovering from in-memory snapshots after a relaunch: what every host's store holds, the
// newest snapshot some host holds each file of, and the files each host lacks, broadcast from
// a rank that holds them.
#include <fcntl.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "checkpoint/commit.h"
#include "checkpoint/shard_file.h"
#include "checkpoint/snapshot_placement.h"
#include "strider/checkpoint/memory_snapshot.h"
#include "strider/checkpoint/run_directory.h"
#include "strider/core/error.h"
#include "strider/dist/consistency.h"
#include "strider/io/file_io.h"
#include "strider/io/sha256.h"
#include "strider/ops/factory.h"

namespace strider::checkpoint {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
constexpr const char* kOp = "memory snapshot recovery";

std::string read_text(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  STRIDER_CHECK(!ec && size < (uint64_t{1} << 30), kOp, "cannot read ", path);
  std::string text(size, '\0');
  io::File f(path, O_RDONLY);
  STRIDER_CHECK(f.is_open(), kOp, "cannot open ", path);
  io::read_exact(f.fd(), text.data(), text.size(), 0, path, kOp);
  return text;
}

// This rank's store: every committed snapshot newer than after_step, identified by its
// manifest's digest (snapshots of one step taken by two incarnations of a run differ), with
// the files that pass verification (their size and every block's checksum): a damaged copy is
// not held, so recovery takes an intact one from another host and replaces it.
Json inventory(const std::string& store, int64_t after_step, const std::string& host) {
  Json inv = {{"host", host}, {"snapshots", Json::array()}};
  for (const CommittedCheckpoint& c : committed_checkpoints(store)) {
    if (c.step <= after_step) continue;
    try {
      const std::string text = read_text(c.dir + "/" + kManifestName);
      const Manifest m = parse_manifest(text, c.dir + "/" + kManifestName);
      io::Sha256 d;
      d.update(text);
      Json held = Json::array();
      detail::VerifiedReader reader(c.dir, m, /*every_file=*/false);  // a store holds some files
      for (size_t f = 0; f < m.files.size(); ++f) {
        try {
          reader.verify_all(static_cast<int64_t>(f));
          held.push_back(f);
        } catch (const std::exception&) {
          // missing, truncated or a block fails its checksum
        }
      }
      inv["snapshots"].push_back({{"step", c.step}, {"id", d.hex_digest()}, {"world", m.world_size},
                                  {"files", static_cast<int64_t>(m.files.size())}, {"held", held}});
    } catch (const std::exception&) {
      // A damaged snapshot is not held: recovery finds its files elsewhere or goes without it.
    }
  }
  return inv;
}

struct Candidate {
  int64_t step = 0, world = 0, files = 0;
  std::string id;
  std::vector<std::vector<int>> holders;  // per file: the ranks whose host holds it
};

// The snapshots the world holds, newest first.
std::vector<Candidate> candidates(const std::vector<Json>& invs) {
  std::map<std::pair<int64_t, std::string>, Candidate> by_id;
  for (size_t r = 0; r < invs.size(); ++r)
    for (const Json& s : invs[r]["snapshots"]) {
      Candidate& c = by_id[{s["step"].get<int64_t>(), s["id"].get<std::string>()}];
      c.step = s["step"].get<int64_t>();
      c.id = s["id"].get<std::string>();
      c.world = s["world"].get<int64_t>();
      c.files = s["files"].get<int64_t>();
      c.holders.resize(static_cast<size_t>(c.files));
      for (const Json& f : s["held"]) c.holders[f.get<size_t>()].push_back(static_cast<int>(r));
    }
  std::vector<Candidate> out;
  for (auto& [key, c] : by_id) out.push_back(std::move(c));
  std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) { return a.step > b.step; });
  return out;
}

std::string missing_file(const Candidate& c) {
  for (size_t f = 0; f < c.holders.size(); ++f)
    if (c.holders[f].empty())
      return "rank " + std::to_string(f) + "'s file of the snapshot of step " + std::to_string(c.step) + " (world size " +
             std::to_string(c.world) + ") is on no surviving host (its host and the host keeping its copy were both "
             "lost, or it had no copy elsewhere)";
  return {};
}

// The first non-empty outcome, as "rank r: <error>", or "".
std::string first_error(const std::vector<std::string>& outcomes) {
  for (size_t r = 0; r < outcomes.size(); ++r)
    if (!outcomes[r].empty()) return "rank " + std::to_string(r) + ": " + outcomes[r];
  return {};
}

}  // namespace

std::optional<RecoveredSnapshot> recover_memory_snapshot(const std::string& store, dist::ProcessGroup& pg,
                                                         int64_t after_step, const MemorySnapshotOptions& options,
                                                         std::string* why) {
  const detail::Placement place = detail::place_ranks(pg, options.host);
  const int rank = pg.rank();
  const std::string& host = place.hosts[rank];
  const bool lead = place.host_lead(rank);
  std::vector<Json> invs;
  for (const std::string& s :
       dist::all_gather_strings(pg, "memory snapshot recovery: what each host holds", inventory(store, after_step, host).dump()))
    invs.push_back(Json::parse(s));

  const std::vector<Candidate> all = candidates(invs);
  const Candidate* chosen = nullptr;
  for (const Candidate& c : all)
    if (missing_file(c).empty()) {
      chosen = &c;
      break;
    }
  if (!chosen) {
    if (why) *why = all.empty() ? "no snapshot newer than step " + std::to_string(after_step) + " is held"
                                : missing_file(all.front());
    if (lead) detail::remove_snapshots_except(store, "");  // newer ones are incomplete or from another incarnation
    dist::all_gather_strings(pg, "memory snapshot recovery: nothing to recover", "");
    return std::nullopt;
  }

  RecoveredSnapshot out{.step = chosen->step, .saved_world = static_cast<int>(chosen->world),
                        .dir = store + "/" + checkpoint_dir_name(chosen->step)};
  // A host holds file f when one of its ranks reported it (ranks of a host share the store).
  auto host_holds = [&](const std::string& h, size_t f) {
    return std::any_of(chosen->holders[f].begin(), chosen->holders[f].end(),
                       [&](int q) { return place.hosts[q] == h; });
  };
  // Holding the chosen snapshot's directory at all: else this host needs its manifest too.
  auto host_has_dir = [&](const std::string& h) {
    for (size_t q = 0; q < invs.size(); ++q)
      if (place.hosts[q] == h)
        for (const Json& s : invs[q]["snapshots"])
          if (s["id"] == chosen->id) return true;
    return false;
  };
  std::string error;
  try {
    if (lead) {
      detail::remove_snapshots_except(store, out.dir);  // a later snapshot must not find another newest
      if (!host_has_dir(host)) fs::create_directories(detail::pending_dir(store, chosen->step));
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  // The manifest, from a rank holding the snapshot (every rank then parses the same text, so
  // all fail alike or none does).
  const int manifest_root = chosen->holders[0].front();
  std::string text;
  try {
    if (rank == manifest_root) text = read_text(out.dir + "/" + kManifestName);
  } catch (const std::exception& e) {
    error = e.what();
  }
  const std::string manifest_text =
      dist::all_gather_strings(pg, "memory snapshot recovery: the manifest", text)[static_cast<size_t>(manifest_root)];
  STRIDER_CHECK(!manifest_text.empty(), kOp, "rank ", manifest_root, " could not read the manifest of the snapshot of step ",
                out.step, " in ", out.dir);
  const Manifest m = parse_manifest(manifest_text, out.dir + "/" + kManifestName);
  // A host without the directory builds it as a pending one and commits it last.
  const std::string building = host_has_dir(host) ? out.dir : detail::pending_dir(store, chosen->step);

  Tensor chunk;  // allocated when a file has to travel
  dist::CollectiveLabel label("memory snapshot recovery: a file some host lacks");
  for (size_t f = 0; f < m.files.size(); ++f) {
    bool everywhere = true;
    for (const std::string& h : place.hosts) everywhere = everywhere && host_holds(h, f);
    if (everywhere) continue;
    const int root = chosen->holders[f].front();
    const bool write = lead && !host_holds(host, f) && error.empty();
    const uint64_t size = m.files[f].bytes;
    std::optional<detail::ChunkFileWriter> file;
    try {
      if (write) file.emplace(building + "/" + m.files[f].name);
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (!chunk.defined()) chunk = empty({static_cast<int64_t>(options.chunk_bytes)}, kByte);
    for (uint64_t at = 0; at < size; at += options.chunk_bytes) {
      const uint64_t n = std::min(options.chunk_bytes, size - at);
      const Tensor c = chunk.narrow(0, 0, static_cast<int64_t>(n));
      try {
        if (rank == root && error.empty()) detail::read_chunk(out.dir + "/" + m.files[f].name, size, at, c);
      } catch (const std::exception& e) {
        error = e.what();
      }
      pg.broadcast(c, root);
      if (!host_holds(host, f)) out.bytes_received += n;
      try {
        if (file && error.empty()) file->write(c, n);
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    // Agreed before the copy is put in place: a source that could not be read must not leave a
    // file of the right size and the wrong bytes behind (the writers' temporaries go).
    const std::string agreed =
        first_error(dist::all_gather_strings(pg, "memory snapshot recovery: a file's copy", error));
    if (!agreed.empty()) {
      error = agreed;
      break;  // on every rank alike
    }
    try {
      if (file) file->finish();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  // Every host has every file before any host commits one it built.
  std::string failed = first_error(dist::all_gather_strings(pg, "memory snapshot recovery: each host's files", error));
  if (failed.empty()) {
    try {
      if (lead && !host_has_dir(host)) {
        detail::write_file_atomically(building, kManifestName, manifest_text);
        std::set<std::string> keep{kManifestName};
        for (const FileRecord& r : m.files) keep.insert(r.name);
        detail::commit_pending(store, building, out.dir, keep);
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
    failed = first_error(dist::all_gather_strings(pg, "memory snapshot recovery: each host's copy", error));
  }
  if (!failed.empty() && lead && !host_has_dir(host)) {
    std::error_code ec;
    fs::remove_all(building, ec);
  }
  STRIDER_CHECK(failed.empty(), kOp, "the snapshot of step ", out.step, " could not be assembled on every host: ", failed);
  return out;
}

}  // namespace strider::checkpoint
