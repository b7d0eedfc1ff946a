#include "strider/checkpoint/reshard.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "checkpoint/commit.h"
#include "checkpoint/row_stream.h"
#include "strider/checkpoint/run_directory.h"
#include "strider/core/error.h"
#include "strider/fsdp/flat_layout.h"
#include "strider/fsdp/options.h"
#include "strider/io/file_io.h"

namespace strider::checkpoint {
namespace {

namespace fs = std::filesystem;
constexpr const char* kOp = "ckpt reshard";
constexpr int64_t kMaxRanks = int64_t{1} << 16;  // one file per rank

void check_strategy(const std::string& strategy, int64_t world) {
  if (strategy == "local") {
    STRIDER_CHECK(world == 1, kOp, "strategy 'local' (one process, no wrapper) needs --world-size 1, not ", world,
                  "; pass --strategy ddp or an FSDP strategy for more ranks");
    return;
  }
  if (strategy == "ddp") return;
  try {
    fsdp::parse_sharding_strategy(strategy);
  } catch (const Error& e) {
    STRIDER_CHECK(false, kOp, "unknown strategy '", strategy, "': use local, ddp or one of FSDP's (", e.what(), ")");
  }
}

// Rows of a tensor rank `rank` of `world` writes: parameters and their moments are split like
// an FSDP shard (ceil(rows / world) rows each); anything else is written whole by rank 0.
std::pair<int64_t, int64_t> rows_of(const TensorRecord& rec, bool split, int64_t rank, int64_t world) {
  const int64_t rows = rec.rows();
  if (!split || rec.shape.empty()) return rank == 0 ? std::pair{int64_t{0}, rows} : std::pair{int64_t{0}, int64_t{0}};
  const fsdp::RowRange r = fsdp::rows_of_rank(rows, static_cast<int>(rank), static_cast<int>(world));
  return {r.begin, r.end};
}

// Whether a tensor is sharded like a parameter: a unit's parameter, or an optimizer moment of
// that parameter's shape (step counters and other state stay whole).
std::set<std::string> row_split_keys(const Manifest& m) {
  std::set<std::string> params, out;
  for (const UnitRecord& u : m.units)
    for (const std::string& p : u.params) params.insert(p);
  for (const auto& [key, rec] : m.tensors) {
    const std::string model = model_key("");
    if (key.rfind(model, 0) == 0) {
      if (params.count(key.substr(model.size()))) out.insert(key);
      continue;
    }
    for (const std::string& p : params) {
      if (key.rfind(optimizer_key(p, ""), 0) != 0) continue;
      auto it = m.tensors.find(model_key(p));
      if (it != m.tensors.end() && IntArrayRef(it->second.shape) == IntArrayRef(rec.shape)) out.insert(key);
    }
  }
  return out;
}

}  // namespace

ReshardReport reshard_checkpoint(const std::string& source, const std::string& out, const ReshardOptions& options) {
  ReshardReport report;
  report.source = resolve_checkpoint(source);
  const Manifest src = read_manifest(report.source);
  const int64_t world = options.world_size;
  STRIDER_CHECK(world >= 1 && world <= kMaxRanks, kOp, "--world-size ", world, " is outside [1, ", kMaxRanks, "]");
  STRIDER_CHECK(options.block_bytes >= 4096 && options.block_bytes <= (uint64_t{1} << 30), kOp, "block_bytes ",
                options.block_bytes, " is outside [4096, 1 GiB]");
  const std::string strategy = options.strategy.empty() ? src.strategy : options.strategy;
  check_strategy(strategy, world);
  STRIDER_CHECK(!out.empty(), kOp, "the output directory is empty");
  detail::VerifiedReader reader(report.source, src);  // every listed file is there, before anything is written
  std::error_code ec;
  STRIDER_CHECK(!fs::exists(out, ec), kOp, out, " already exists; name a new directory for the resharded checkpoint");
  const fs::path out_path = fs::absolute(out, ec);
  STRIDER_CHECK(fs::is_directory(out_path.parent_path(), ec), kOp, "the directory ", out_path.parent_path().string(),
                " for ", out, " does not exist");
  // Written beside `out` and renamed into place; a killed reshard's leftover is replaced.
  const std::string pending = (out_path.parent_path() / ("." + out_path.filename().string() + ".pending")).string();
  fs::remove_all(pending, ec);
  STRIDER_CHECK(fs::create_directory(pending, ec), kOp, "cannot create ", pending, ": ", ec.message());

  try {
    Manifest m = src;
    m.world_size = world;
    m.strategy = strategy;
    for (UnitRecord& u : m.units) u.strategy = strategy;
    m.files.clear();
    for (auto& [key, rec] : m.tensors) rec.shards.clear();
    m.rng.clear();
    for (int64_t r = 0; r < world && !src.rng.empty(); ++r)
      m.rng.push_back(src.rng[static_cast<size_t>(r % src.world_size)]);  // as a load at `world` ranks assigns them

    const std::set<std::string> split = row_split_keys(src);
    for (int64_t r = 0; r < world; ++r) {
      std::vector<detail::PieceLayout> layout;
      std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> pieces;
      for (const auto& [key, rec] : src.tensors) {
        const auto rows = rows_of(rec, split.count(key) > 0, r, world);
        if (rows.first == rows.second) continue;
        DimVector shape = rec.shape;
        if (!shape.empty()) shape[0] = rows.second - rows.first;
        layout.push_back({key, rec.dtype, shape, rows.first, rows.second});
        pieces.push_back({key, rows});
      }
      const std::string name = detail::rank_file_name(static_cast<int>(r), static_cast<int>(world));
      detail::ShardFileWriter writer(pending, name, layout, options.block_bytes);
      for (const auto& [key, rows] : pieces)
        detail::stream_rows(reader, key, src.tensors.at(key), rows.first, rows.second,
                            [&](const void* p, size_t n) { writer.write(p, n); });
      const detail::WrittenFile wf = writer.finish();
      for (size_t i = 0; i < pieces.size(); ++i)
        m.tensors.at(pieces[i].first).shards.push_back({r, pieces[i].second.first, pieces[i].second.second, wf.offsets[i]});
      report.bytes += wf.record.bytes;
      m.files.push_back(wf.record);
    }
    const std::string text = format_manifest(m);
    report.manifest = parse_manifest(text, out + "/" + kManifestName);  // the same checks a loader makes
    detail::write_file_atomically(pending, kManifestName, text);
    STRIDER_CHECK(::rename(pending.c_str(), out_path.c_str()) == 0, kOp, "cannot move ", pending, " to ", out, ": ",
                  std::strerror(errno));
    io::fsync_directory(out_path.parent_path().string());
  } catch (...) {
    fs::remove_all(pending, ec);
    throw;
  }
  return report;
}

}  // namespace strider::checkpoint
