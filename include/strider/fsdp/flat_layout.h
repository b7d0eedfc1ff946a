#pragma once
// FlatLayout: where the parameters of one FSDP unit sit when they are split along dim 0 over a
// group of ranks. Geometry only (shapes and element offsets, no tensors), so the unit that
// allocates the buffers, the cost model that counts their bytes, the state dicts and checkpoints
// that name the rows each rank holds, and the tests all read the one description.
//
// Parameter i of shape [D0, ...] (R elements per row) over N ranks has chunk_rows = ceil(D0 / N):
//  - rank r's shard of it holds rows [r * chunk_rows, (r+1) * chunk_rows) of the whole, the rows
//    past D0 being padding (zeros); the last ranks may hold fewer real rows, or none;
//  - each rank's shards are back to back in one flat shard buffer of shard_numel() elements,
//    parameter i at shard_offset;
//  - the gathered buffer (full_numel() = N x shard_numel() elements) holds the parameters one
//    after another, each padded to N x chunk_rows rows, so every parameter is whole (a view with
//    its own shape and strides) and rank q's chunk of parameter i sits at full_offset + q x
//    chunk_numel. pieces() is that map, the one the all-gather scatters by.
// Dim 0 is the outermost dimension of every dense memory format (contiguous and channels-last
// alike), so rows are contiguous and the layout does not depend on the format.
#include <cstdint>
#include <vector>

#include "strider/core/int_array_ref.h"
#include "strider/dist/process_group.h"

namespace strider::fsdp {

// Rows [begin, end) of a tensor's dim 0.
struct RowRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const RowRange&) const = default;
};

// FSDP's split of `rows` rows over `ranks` ranks: ceil(rows / ranks) rows per rank, rank r's
// from r times that; past the end, fewer or none. Checkpoints split rows the same way (among the
// replicas that write them, and when resharding for another world size).
int64_t chunk_rows(int64_t rows, int ranks);
RowRange rows_of_rank(int64_t rows, int rank, int ranks);

// One parameter's place in its unit's flat buffers.
struct FlatParam {
  DimVector sizes;             // the whole parameter's shape (at least 1-d)
  int64_t rows = 0;            // sizes[0]
  int64_t row_numel = 0;       // elements per row
  int64_t chunk_rows = 0;      // rows per rank's shard, padding included
  int64_t shard_offset = 0;    // elements into every rank's flat shard buffer
  int64_t full_offset = 0;     // elements into the gathered buffer
  int ranks = 1;               // ranks it is split over

  int64_t numel() const { return rows * row_numel; }
  int64_t chunk_numel() const { return chunk_rows * row_numel; }
  // The shard's shape: the parameter's with dim 0 = chunk_rows.
  DimVector shard_sizes() const;
  // The real (not padding) rows of the whole parameter that rank `rank` holds.
  RowRange rows_of(int rank) const { return rows_of_rank(rows, rank, ranks); }
  // Elements of rank `rank`'s chunk that are real rows; the rest of its chunk_numel() is padding.
  int64_t valid_numel(int rank) const { return rows_of(rank).size() * row_numel; }
};

class FlatLayout {
 public:
  FlatLayout() = default;
  // Parameters of these shapes, in this order, split over `ranks` ranks (1: not split; NoShard
  // and DDP lay out their gradient buffers this way). Throws on a 0-dimensional shape.
  FlatLayout(const std::vector<DimVector>& shapes, int ranks);

  int ranks() const { return ranks_; }
  size_t size() const { return params_.size(); }
  bool empty() const { return params_.empty(); }
  const FlatParam& operator[](size_t i) const { return params_[i]; }
  const std::vector<FlatParam>& params() const { return params_; }

  // Elements of one rank's flat shard buffer, padding included.
  int64_t shard_numel() const { return shard_numel_; }
  // Elements of the gathered buffer: shard_numel() x ranks().
  int64_t full_numel() const { return shard_numel_ * ranks_; }
  // Elements of the parameters themselves; full_numel() - numel() is padding.
  int64_t numel() const { return numel_; }
  // Piece i: rank q's shard elements [shard_offset, shard_offset + chunk_numel) of parameter i
  // go to full_offset + q x chunk_numel of the gathered buffer (dist::ProcessGroup's pieces).
  std::vector<dist::Piece> pieces() const;

 private:
  int ranks_ = 1;
  std::vector<FlatParam> params_;
  int64_t shard_numel_ = 0, numel_ = 0;
};

}  // namespace strider::fsdp
