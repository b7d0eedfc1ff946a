// The stride math of SPEC §3-§5 and §7, one worked example at a time.
#include <gtest/gtest.h>
#include <strider/strider.h>

namespace strider {
namespace {

using layout::compute_flags;
using layout::infer_dense_strides;
using layout::suggest_memory_format;

DimVector D(std::initializer_list<int64_t> v) { return DimVector(v); }

TEST(LayoutFormulas, ContiguousUsesMaxOne) {
  EXPECT_EQ(layout::contiguous_strides({2, 3, 4, 5}), D({60, 20, 5, 1}));
  EXPECT_EQ(layout::contiguous_strides({2, 0, 3}), D({3, 3, 1}));
  EXPECT_EQ(layout::contiguous_strides({}), D({}));
}

TEST(LayoutFormulas, ChannelsLastPropagatesZeros) {
  EXPECT_EQ(layout::channels_last_strides({2, 3, 4, 5}), D({60, 1, 15, 3}));
  EXPECT_EQ(layout::channels_last_strides({2, 3, 1, 1}), D({3, 1, 3, 3}));
  EXPECT_EQ(layout::channels_last_strides({2, 1, 4, 5}), D({20, 1, 5, 1}));
  EXPECT_EQ(layout::channels_last_strides({2, 0, 3, 4}), D({0, 1, 0, 0}));
  EXPECT_EQ(layout::channels_last_strides({2, 3, 0, 5}), D({0, 1, 15, 3}));
  EXPECT_EQ(layout::channels_last_3d_strides({2, 3, 2, 3, 4}), D({72, 1, 36, 12, 3}));
}

TEST(LayoutFormulas, RankErrorsUsePyTorchWording) {
  EXPECT_THROW(layout::strides_for_format({3, 4, 5}, MemoryFormat::ChannelsLast, "empty"), Error);
  try {
    layout::strides_for_format({3, 4, 5}, MemoryFormat::ChannelsLast, "empty");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("required rank 4 tensor to use channels_last format"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("[empty]"), std::string::npos);
  }
  EXPECT_THROW(layout::strides_for_format({2, 3, 4, 5}, MemoryFormat::ChannelsLast3d, "empty"), Error);
  EXPECT_THROW(layout::strides_for_format({2, 3}, MemoryFormat::Preserve, "empty"), Error);
}

struct LikeCase {
  DimVector sizes, strides;
  bool cl_like;
};

TEST(LayoutPredicates, StridesLikeChannelsLastTable) {
  // SPEC §4.5 worked examples.
  const std::vector<LikeCase> cases = {
      {{2, 3, 4, 5}, {60, 1, 15, 3}, true},   {{2, 3, 4, 5}, {240, 1, 60, 6}, true},
      {{2, 3, 4, 5}, {120, 1, 30, 6}, true},  {{2, 3, 3, 3}, {75, 1, 30, 6}, false},
      {{2, 3, 1, 1}, {3, 1, 3, 3}, true},     {{2, 3, 1, 1}, {3, 1, 1, 1}, false},
      {{2, 1, 4, 5}, {20, 1, 5, 1}, true},    {{2, 1, 4, 5}, {20, 20, 5, 1}, false},
      {{2, 1, 3, 1}, {3, 1, 1, 1}, true},     {{2, 1, 3, 1}, {3, 3, 1, 1}, false},
      {{2, 1, 1, 1}, {1, 1, 1, 1}, false},    {{2, 1, 1, 1}, {5, 5, 5, 5}, false},
      {{2, 1, 1, 1}, {5, 1, 3, 2}, true},     {{1, 4, 1, 3}, {12, 1, 4, 4}, false},
      {{2, 3, 4, 5}, {60, 0, 15, 3}, false},  {{2, 3, 4, 5}, {0, 1, 0, 0}, false},
      {{0, 3, 4, 5}, {60, 1, 15, 3}, false},  {{2, 3, 4, 5}, {50, 1, 15, 3}, false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(layout::is_strides_like_channels_last(c.sizes, c.strides), c.cl_like)
        << IntArrayRef(c.sizes) << "@" << IntArrayRef(c.strides);
  }
}

TEST(LayoutPredicates, ContiguityWalks) {
  EXPECT_TRUE(layout::is_contiguous({2, 1, 4, 5}, {20, 99, 5, 1}));
  EXPECT_TRUE(layout::is_contiguous({0, 3}, {7, 9}));
  EXPECT_FALSE(layout::is_channels_last_contiguous({0, 3, 4, 5}, {60, 20, 5, 1}));
  EXPECT_TRUE(layout::is_channels_last_contiguous({0, 3, 4, 5}, {60, 1, 15, 3}));
  // Ambiguous shapes are both.
  for (auto [s, st] : std::vector<std::pair<DimVector, DimVector>>{
           {{2, 3, 1, 1}, {3, 1, 1, 1}}, {{2, 1, 4, 5}, {20, 20, 5, 1}}, {{1, 1, 1, 1}, {1, 1, 1, 1}}}) {
    EXPECT_TRUE(layout::is_contiguous(s, st));
    EXPECT_TRUE(layout::is_channels_last_contiguous(s, st));
  }
  // CL-contiguous but not CL-suggesting (issue #68430).
  EXPECT_TRUE(layout::is_channels_last_contiguous({1, 3, 32, 32}, {3, 1, 96, 3}));
  EXPECT_EQ(suggest_memory_format({1, 3, 32, 32}, {3, 1, 96, 3}), MemoryFormat::Contiguous);
}

TEST(LayoutPredicates, NonOverlappingAndDense) {
  EXPECT_TRUE(compute_flags({2, 3, 4, 5}, {60, 1, 15, 3}).is_non_overlapping_and_dense);
  EXPECT_TRUE(compute_flags({2, 3, 4, 5}, {1, 2, 6, 24}).is_non_overlapping_and_dense);
  EXPECT_FALSE(compute_flags({2, 3, 4, 5}, {120, 1, 30, 6}).is_non_overlapping_and_dense);
  EXPECT_FALSE(compute_flags({2, 3, 4, 5}, {0, 1, 0, 0}).is_non_overlapping_and_dense);
  EXPECT_TRUE(compute_flags({0, 3}, {5, 5}).is_non_overlapping_and_dense);
}

TEST(LayoutPredicates, Rank5UsesChannelsLast3d) {
  auto f = compute_flags({2, 3, 2, 3, 4}, {72, 1, 36, 12, 3});
  EXPECT_TRUE(f.is_channels_last_3d_contiguous);
  EXPECT_TRUE(f.is_strides_like_channels_last_3d);
  EXPECT_FALSE(f.is_strides_like_channels_last);
  EXPECT_EQ(suggest_memory_format({2, 3, 2, 3, 4}, {72, 1, 36, 12, 3}), MemoryFormat::ChannelsLast3d);
}

TEST(LayoutInference, InferDenseStridesKeepsOrder) {
  EXPECT_EQ(infer_dense_strides({2, 3, 4, 5}, {120, 1, 30, 6}), D({60, 1, 15, 3}));
  EXPECT_EQ(infer_dense_strides({3, 3, 4}, {4, 24, 1}), D({4, 12, 1}));
  EXPECT_EQ(infer_dense_strides({5, 3, 4}, {1, 0, 5}), D({1, 5, 15}));
  EXPECT_EQ(infer_dense_strides({2, 3}, {1, 1}), D({1, 2}));
  EXPECT_EQ(infer_dense_strides({3, 2}, {1, 1}), D({2, 1}));
  EXPECT_EQ(infer_dense_strides({2, 3, 4, 5}, {0, 1, 0, 0}), D({60, 20, 5, 1}));
}

TEST(LayoutInference, ViewStridesChunkAlgorithm) {
  // CL [2,3,4,5]: reshape(2,3,20) is a view; view(2,60) is impossible.
  EXPECT_EQ(*layout::view_strides({2, 3, 4, 5}, {60, 1, 15, 3}, {2, 3, 20}), D({60, 1, 3}));
  EXPECT_FALSE(layout::view_strides({2, 3, 4, 5}, {60, 1, 15, 3}, {2, 60}).has_value());
  EXPECT_EQ(*layout::view_strides({1, 3, 4, 5}, {60, 1, 15, 3}, {1, 3, 20}), D({3, 1, 3}));
  EXPECT_EQ(*layout::view_strides({}, {}, {1, 1}), D({1, 1}));
  EXPECT_EQ(*layout::view_strides({0, 4}, {4, 1}, {2, 0}), D({1, 1}));
}

TEST(LayoutBroadcast, ShapesAndErrors) {
  EXPECT_EQ(layout::broadcast_shapes({2, 1, 4}, {3, 1}, "add"), D({2, 3, 4}));
  EXPECT_EQ(layout::broadcast_shapes({}, {3}, "add"), D({3}));
  EXPECT_THROW(layout::broadcast_shapes({2, 5}, {2, 4}, "add"), Error);
}

}  // namespace
}  // namespace strider
