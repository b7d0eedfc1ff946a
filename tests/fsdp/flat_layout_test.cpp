// FlatLayout alone: the split of each parameter's rows over 1 to 4 ranks, the padding, the
// offsets of the flat shard and gathered buffers, and that the pieces reassemble the parameters.
#include <gtest/gtest.h>
#include <strider/fsdp/flat_layout.h>

#include <algorithm>
#include <vector>

#include "strider/core/error.h"

namespace strider::fsdp {
namespace {

// Odd shapes: a row count no world size divides, a 1-d bias, rows fewer than ranks, one row.
const std::vector<DimVector> kShapes = {{7, 3}, {5}, {2, 3, 5}, {1}};

TEST(FlatLayoutTest, RowsOfRankPartitionTheRows) {
  for (int ranks = 1; ranks <= 4; ++ranks)
    for (int64_t rows : {0, 1, 2, 3, 4, 5, 7, 10, 13}) {
      const int64_t chunk = chunk_rows(rows, ranks);
      EXPECT_EQ(chunk, (rows + ranks - 1) / ranks);
      int64_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const RowRange got = rows_of_rank(rows, r, ranks);
        EXPECT_EQ(got.begin, std::min(rows, r * chunk)) << rows << " rows, rank " << r << " of " << ranks;
        EXPECT_EQ(got.begin, next);
        EXPECT_LE(got.size(), chunk);
        next = got.end;
      }
      EXPECT_EQ(next, rows) << rows << " rows over " << ranks << " ranks";
    }
}

TEST(FlatLayoutTest, RowsFewerThanRanksLeaveTheLastRanksEmpty) {
  EXPECT_EQ(rows_of_rank(1, 0, 4), (RowRange{0, 1}));
  for (int r = 1; r < 4; ++r) EXPECT_EQ(rows_of_rank(1, r, 4).size(), 0);
  // 5 rows over 4 ranks: 2 rows each, so rank 3 holds none (not 1 + 1 + 1 + 2).
  EXPECT_EQ(rows_of_rank(5, 2, 4), (RowRange{4, 5}));
  EXPECT_EQ(rows_of_rank(5, 3, 4), (RowRange{5, 5}));
}

TEST(FlatLayoutTest, OffsetsAndPadding_ThreeRanks) {
  const FlatLayout l(kShapes, 3);
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l.ranks(), 3);
  // chunk rows 3, 2, 1, 1; elements per row 3, 1, 15, 1.
  const std::vector<int64_t> chunk_rows = {3, 2, 1, 1}, chunk_numel = {9, 2, 15, 1};
  const std::vector<int64_t> shard_offset = {0, 9, 11, 26}, full_offset = {0, 27, 33, 78};
  for (size_t i = 0; i < l.size(); ++i) {
    EXPECT_EQ(l[i].chunk_rows, chunk_rows[i]) << i;
    EXPECT_EQ(l[i].chunk_numel(), chunk_numel[i]) << i;
    EXPECT_EQ(l[i].shard_offset, shard_offset[i]) << i;
    EXPECT_EQ(l[i].full_offset, full_offset[i]) << i;
  }
  EXPECT_EQ(l.shard_numel(), 27);
  EXPECT_EQ(l.full_numel(), 81);
  EXPECT_EQ(l.numel(), 21 + 5 + 30 + 1);
  EXPECT_EQ(l[0].shard_sizes(), (DimVector{3, 3}));
  EXPECT_EQ(l[2].shard_sizes(), (DimVector{1, 3, 5}));
  // 7 rows over 3 ranks: 3, 3, 1 (two padding rows on rank 2); 2 rows: 1, 1, 0.
  EXPECT_EQ(l[0].rows_of(2), (RowRange{6, 7}));
  EXPECT_EQ(l[0].valid_numel(2), 3);
  EXPECT_EQ(l[2].rows_of(2).size(), 0);
  EXPECT_EQ(l[2].valid_numel(2), 0);
}

TEST(FlatLayoutTest, OneRankIsTheParametersBackToBack) {
  const FlatLayout l(kShapes, 1);
  int64_t offset = 0;
  for (const FlatParam& p : l.params()) {
    EXPECT_EQ(p.chunk_rows, p.rows);
    EXPECT_EQ(p.shard_offset, offset);
    EXPECT_EQ(p.full_offset, offset);
    offset += p.numel();
  }
  EXPECT_EQ(l.shard_numel(), l.numel());
  EXPECT_EQ(l.full_numel(), l.numel());
}

// Every rank builds its flat shard from the whole parameters as FSDP does (its rows, zeros
// past the end); scattering all shards by pieces() must give every parameter whole, at its full
// offset, with zeros in the padding, and the valid elements must add up to the parameters'.
TEST(FlatLayoutTest, ShardsScatteredByPiecesReassembleTheParameters_OneToFourRanks) {
  for (int ranks = 1; ranks <= 4; ++ranks) {
    const FlatLayout l(kShapes, ranks);
    EXPECT_EQ(l.full_numel(), l.shard_numel() * ranks);
    std::vector<std::vector<double>> whole;
    for (size_t i = 0; i < l.size(); ++i) {
      whole.emplace_back();
      for (int64_t e = 0; e < l[i].numel(); ++e) whole.back().push_back(1000.0 * static_cast<double>(i + 1) + e);
    }
    std::vector<double> gathered(static_cast<size_t>(l.full_numel()), -1.0);
    const std::vector<dist::Piece> pieces = l.pieces();
    ASSERT_EQ(pieces.size(), l.size());
    for (int q = 0; q < ranks; ++q) {
      std::vector<double> shard(static_cast<size_t>(l.shard_numel()), 0.0);
      for (size_t i = 0; i < l.size(); ++i) {
        const RowRange rows = l[i].rows_of(q);
        for (int64_t e = 0; e < rows.size() * l[i].row_numel; ++e)
          shard[l[i].shard_offset + e] = whole[i][rows.begin * l[i].row_numel + e];
      }
      int64_t at = 0;  // all_gather_pieces: rank q's segment, piece after piece
      for (const dist::Piece& p : pieces)
        for (int64_t e = 0; e < p.length; ++e, ++at) gathered[p.offset + q * p.length + e] = shard[at];
      EXPECT_EQ(at, l.shard_numel());
    }
    int64_t valid = 0;
    for (size_t i = 0; i < l.size(); ++i) {
      const FlatParam& p = l[i];
      for (int64_t e = 0; e < p.numel(); ++e) EXPECT_EQ(gathered[p.full_offset + e], whole[i][e]) << i << " " << e;
      for (int64_t e = p.numel(); e < p.chunk_numel() * ranks; ++e)
        EXPECT_EQ(gathered[p.full_offset + e], 0.0) << "padding of " << i << " at " << ranks << " ranks";
      for (int q = 0; q < ranks; ++q) valid += p.valid_numel(q);
    }
    for (double v : gathered) EXPECT_NE(v, -1.0);  // every element written once
    EXPECT_EQ(valid, l.numel());
  }
}

TEST(FlatLayoutTest, RefusesZeroDimensionalShapesAndNoRanks) {
  EXPECT_THROW(FlatLayout({{3}, {}}, 2), Error);
  EXPECT_THROW(FlatLayout({{3}}, 0), Error);
  EXPECT_TRUE(FlatLayout({}, 2).empty());
  EXPECT_EQ(FlatLayout({}, 2).full_numel(), 0);
}

}  // namespace
}  // namespace strider::fsdp
