#include "strider/fsdp/flat_layout.h"

#include <algorithm>

#include "strider/core/error.h"

namespace strider::fsdp {

int64_t chunk_rows(int64_t rows, int ranks) {
  STRIDER_INTERNAL_ASSERT(rows >= 0 && ranks >= 1, "rows and ranks must be non-negative and positive");
  return (rows + ranks - 1) / ranks;
}

RowRange rows_of_rank(int64_t rows, int rank, int ranks) {
  STRIDER_INTERNAL_ASSERT(rank >= 0 && rank < ranks, "rank outside the group");
  const int64_t chunk = chunk_rows(rows, ranks);
  const int64_t begin = std::min(rows, chunk * rank);
  return {begin, std::min(rows, begin + chunk)};
}

DimVector FlatParam::shard_sizes() const {
  DimVector s = sizes;
  s[0] = chunk_rows;
  return s;
}

FlatLayout::FlatLayout(const std::vector<DimVector>& shapes, int ranks) : ranks_(ranks) {
  STRIDER_CHECK(ranks >= 1, "FlatLayout", "a layout needs at least one rank, got ", ranks);
  int64_t full = 0;
  for (const DimVector& shape : shapes) {
    STRIDER_CHECK(!shape.empty(), "FlatLayout", "a 0-dimensional parameter cannot be split along dim 0");
    FlatParam p;
    p.sizes = shape;
    p.rows = shape[0];
    p.row_numel = 1;
    for (size_t d = 1; d < shape.size(); ++d) p.row_numel *= shape[d];
    p.chunk_rows = chunk_rows(p.rows, ranks);
    p.shard_offset = shard_numel_;
    p.full_offset = full;
    p.ranks = ranks;
    shard_numel_ += p.chunk_numel();
    full += p.chunk_numel() * ranks;
    numel_ += p.numel();
    params_.push_back(std::move(p));
  }
}

std::vector<dist::Piece> FlatLayout::pieces() const {
  std::vector<dist::Piece> out;
  out.reserve(params_.size());
  for (const FlatParam& p : params_) out.push_back({p.full_offset, p.chunk_numel()});
  return out;
}

}  // namespace strider::fsdp
