#pragma once
// A checkpoint's manifest (`manifest.json`, the last file a save writes): which files the
// checkpoint has, each with its size and a CRC-32C per block of bytes; which tensors it holds,
// each with its dtype, whole shape and the row ranges of it stored where; and the training
// state that is not a tensor (step, optimizer, schedule, data position, each rank's generator).
// A directory without a valid manifest is not a checkpoint, so a killed save leaves nothing a
// loader could mistake for one.
//
// The manifest carries its own checksum (CRC-32C of its text with the digits as zeros, the
// last field), so a flipped or truncated manifest is refused too. parse_manifest validates every
// field before anything uses it: types, ranges, shapes that do not overflow, shards that tile
// each tensor's rows exactly and lie inside their files, blocks that cover each file exactly.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "strider/core/scalar_type.h"
#include "strider/core/int_array_ref.h"

namespace strider::checkpoint {

inline constexpr const char* kManifestName = "manifest.json";
inline constexpr int kManifestVersion = 1;
// read_manifest refuses a larger file before reading it (a manifest of 1,000 ranks' files and
// shards of a large model is tens of MiB).
inline constexpr uint64_t kMaxManifestBytes = uint64_t{256} << 20;

struct FileRecord {
  std::string name;            // relative to the checkpoint directory
  uint64_t bytes = 0;          // the file's size
  uint64_t header_bytes = 0;   // the safetensors header (length and JSON); tensor data follows
  uint64_t block_bytes = 0;    // checksum granularity
  std::vector<uint32_t> blocks;  // CRC-32C of bytes [k * block_bytes, (k + 1) * block_bytes)
};

// Rows [row_begin, row_end) of a tensor, stored contiguously (row-major) in `file` from byte
// `offset`. A tensor of rank 0 has one row.
struct ShardRecord {
  int64_t file = 0;  // index into Manifest::files
  int64_t row_begin = 0, row_end = 0;
  uint64_t offset = 0;
};

struct TensorRecord {
  ScalarType dtype = kFloat;
  DimVector shape;                  // the whole tensor's
  std::vector<ShardRecord> shards;  // sorted by row_begin, tiling [0, rows)
  int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  uint64_t row_bytes() const;
};

struct UnitRecord {
  std::string name, strategy;
  std::vector<std::string> params;
};

struct DataPosition {
  int64_t epoch = 0;              // the epoch in progress (or the next one)
  int64_t batches_done = 0;       // of that epoch's global batches
  int64_t global_batch_size = 0;  // samples per optimizer step over all ranks
};

struct Manifest {
  int64_t step = 0;            // optimizer steps taken when it was saved
  int64_t world_size = 1;
  std::string strategy;        // "local", "ddp", "full_shard", ...
  std::vector<UnitRecord> units;
  std::vector<FileRecord> files;
  std::map<std::string, TensorRecord> tensors;  // "model/<name>", "optim/<param>/<key>"
  std::string optimizer;       // Optimizer::name(), empty if none was saved
  int64_t optimizer_steps = 0;
  // Parameters (model names) whose own step count differs from optimizer_steps (one without a
  // gradient in some steps, or added to the optimizer later; Optimizer::param_step).
  std::map<std::string, int64_t> optimizer_param_steps;
  std::optional<int64_t> scheduler_step;
  std::optional<DataPosition> data;
  std::vector<std::string> rng;                 // per rank: Generator::state() (empty: not saved)
  std::map<std::string, std::string> user;      // the caller's own strings, round-tripped
};

// The text written to manifest.json (with its checksum).
std::string format_manifest(const Manifest& manifest);
// Validates `text` (read from `path`, named in errors) and returns the manifest; throws
// strider::Error naming the path and field.
Manifest parse_manifest(const std::string& text, const std::string& path);
// Reads and parses DIR/manifest.json; refuses, before reading, anything that is not a regular
// file (a FIFO, a device) or is larger than kMaxManifestBytes.
Manifest read_manifest(const std::string& checkpoint_dir);

// Tensor keys: "model/" + a parameter or buffer name; "optim/" + parameter + "/" + state key.
std::string model_key(const std::string& name);
std::string optimizer_key(const std::string& param, const std::string& state_key);

}  // namespace strider::checkpoint
