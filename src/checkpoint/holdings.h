#pragma once
// What one rank holds of a TrainingState's tensors, under checkpoint keys: each tensor's rows
// on this rank and their place in the whole tensor, for whatever wraps the model (plain, DDP,
// FSDP under any strategy). Saving and loading both start here, so a checkpoint's layout never
// depends on how the writer or the reader was sharded.
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/shard_file.h"
#include "strider/checkpoint/training_state.h"

namespace strider::checkpoint::detail {

struct Holding {
  std::string key;          // "model/<name>" or "optim/<param>/<state key>"
  Tensor rows;              // this rank's rows of the whole tensor (a view of the live tensor)
  DimVector global_shape;
  int64_t row_offset = 0;   // rows are [row_offset, row_offset + rows.size(0)) (rank 0: the one row)
  // Ranks holding the same rows. Parameters and their state are equal on all of them, so each
  // writes its share of the rows; other replicated tensors (buffers) are written by replica 0.
  int replica_rank = 0, replicas = 1;
  bool split_rows = false;
};

// A parameter as this rank holds it (for optimizer state, which has the shape of `padded`).
struct ParamView {
  std::string name, unit;
  Tensor padded;
  Holding holding;
};

struct ModelLayout {
  std::string strategy;  // "local", "ddp", "full_shard", ...
  std::vector<ParamView> params;
  std::vector<Holding> buffers;
  std::vector<UnitRecord> units;
};

ModelLayout describe_model(nn::Module& model, int rank, int world);
// The parameter whose local tensor is `t` (an optimizer's parameter); throws if none.
const ParamView& param_of(const ModelLayout& layout, const Tensor& t, const std::string& optimizer_name);
// The optimizer state tensor `state` of `param`, held like the parameter when it has the
// parameter's local shape, else whole (written by rank 0).
Holding state_holding(const ParamView& param, const std::string& key, const Tensor& state, int rank, int world);
// The rows of `h` this rank writes (none when a replica with a lower rank writes them).
std::optional<Piece> piece_to_write(const Holding& h);

}  // namespace strider::checkpoint::detail
