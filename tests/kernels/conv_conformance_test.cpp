// oneDNN convolution (float32, bfloat16) against the reference loop nest, forward and both
// backward passes, over layouts, groups, strides, dilations and transposed convolutions.
#include <gtest/gtest.h>

#include <strider/ops/conv.h>

#include "support/compare.h"
#include "support/layouts.h"

namespace strider {
namespace {

using testing::all_close;

struct Case {
  DimVector in, w;
  ops::ConvArgs args;
  bool bias;
};

ops::ConvArgs A(DimVector s, DimVector p, DimVector d, int64_t g, bool t = false, DimVector op = {0}) {
  ops::ConvArgs a;
  a.stride = s;
  a.padding = p;
  a.dilation = d;
  a.groups = g;
  a.transposed = t;
  a.output_padding = op;
  return a;
}

std::vector<Case> cases() {
  return {
      {{2, 4, 9, 9}, {8, 4, 3, 3}, A({1}, {1}, {1}, 1), true},
      {{2, 6, 10, 8}, {6, 2, 3, 3}, A({2}, {1}, {1}, 3), false},
      {{1, 8, 9, 9}, {8, 1, 3, 3}, A({1}, {2}, {2}, 8), true},           // depthwise, dilated
      {{3, 5, 7, 7}, {4, 5, 1, 1}, A({2}, {0}, {1}, 1), true},           // 1x1 strided
      {{2, 8, 5, 6}, {12, 8, 1, 1}, A({1}, {0}, {1}, 1), false},         // 1x1 (on AMX: a matmul)
      {{2, 3, 11, 9}, {5, 3, 5, 3}, A({2, 1}, {2, 1}, {1, 2}, 1), true}, // asymmetric
      {{2, 4, 5, 5}, {4, 3, 3, 3}, A({2}, {1}, {1}, 1, true, {1}), true}, // transposed
      {{2, 4, 6, 6}, {4, 2, 3, 3}, A({1}, {1}, {1}, 2, true), false},     // grouped transposed
      {{2, 3, 4, 5, 5}, {4, 3, 3, 3, 3}, A({1}, {1}, {1}, 1), true},     // 3-d
      {{2, 4, 12}, {6, 2, 3}, A({2}, {1}, {1}, 2), true},                // 1-d
  };
}

void check(ScalarType dt, double tol) {
  for (const Case& c : cases()) {
    for (MemoryFormat f : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
      const bool is4d = c.in.size() == 4, is5d = c.in.size() == 5;
      MemoryFormat fmt = is5d && f == MemoryFormat::ChannelsLast ? MemoryFormat::ChannelsLast3d : f;
      Tensor in = testing::sample(c.in, kFloat, 1).to(dt);
      Tensor w = testing::sample(c.w, kFloat, 2).to(dt);
      if (is4d || is5d) in = in.contiguous(fmt);
      Tensor b = c.bias ? testing::sample({c.args.transposed ? c.w[1] * c.args.groups : c.w[0]}, kFloat, 3).to(dt) : Tensor();
      Tensor out = ops::convolution(in, w, b, c.args);
      Tensor ref;
      {
        KernelPreferenceGuard g(KernelPreference::Reference);
        ref = ops::convolution(in, w, b, c.args);
      }
      EXPECT_TRUE(all_close(out, ref, tol, tol)) << IntArrayRef(c.in) << " w " << IntArrayRef(c.w) << " " << f;
      if ((is4d || is5d) && f != MemoryFormat::Contiguous) {
        EXPECT_EQ(out.suggest_memory_format(), fmt);
      }
      Tensor go = testing::sample(out.sizes(), kFloat, 4).to(dt);
      auto [gi, gw, gb] = ops::convolution_backward(go, in, w, c.args, {true, true, c.bias});
      Tensor rgi, rgw, rgb;
      {
        KernelPreferenceGuard g(KernelPreference::Reference);
        std::tie(rgi, rgw, rgb) = ops::convolution_backward(go, in, w, c.args, {true, true, c.bias});
      }
      EXPECT_TRUE(all_close(gi, rgi, tol, tol)) << "grad input " << IntArrayRef(c.in);
      EXPECT_TRUE(all_close(gw, rgw, tol * 4, tol * 4)) << "grad weight " << IntArrayRef(c.w);
      if (c.bias) {
        EXPECT_TRUE(all_close(gb, rgb, tol * 4, tol * 4)) << "grad bias";
      }
      EXPECT_EQ(gi.strides(), in.strides()) << "grad input keeps the input's layout";
    }
  }
}

TEST(ConvConformance, OneDnnFloat32MatchesReference) { check(kFloat, 1e-4); }
TEST(ConvConformance, OneDnnBFloat16MatchesReference) { check(kBFloat16, 3e-2); }

TEST(ConvLayout, ChannelsLastDominates) {
  Tensor x = rand({2, 4, 5, 5}), w = rand({6, 4, 3, 3});
  auto cl = MemoryFormat::ChannelsLast;
  EXPECT_EQ(ops::convolution(x.to(cl), w, Tensor(), {}).strides(), IntArrayRef({54, 1, 18, 6}));
  EXPECT_EQ(ops::convolution(x, w.to(cl), Tensor(), {}).strides(), IntArrayRef({54, 1, 18, 6}));
  EXPECT_EQ(ops::convolution(x, w, Tensor(), {}).strides(), IntArrayRef({54, 9, 3, 1}));
  Tensor x3 = rand({2, 3, 4, 5, 5}), w3 = rand({4, 3, 3, 3, 3});
  EXPECT_EQ(ops::convolution(x3.to(MemoryFormat::ChannelsLast3d), w3, Tensor(), {}).suggest_memory_format(),
            MemoryFormat::ChannelsLast3d);
}

}  // namespace
}  // namespace strider
