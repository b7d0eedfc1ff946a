// The normalization, pooling and matrix-product implementation lists: every implementation that
// accepts a problem matches the reference in float32, bfloat16 and float64, contiguous and
// channels-last, and the fast path is taken (and so compared) wherever it should apply.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <strider/strider.h>

#include "kernels/attention.h"
#include "kernels/conv.h"
#include "kernels/cpu_isa.h"
#include "kernels/copy.h"
#include "kernels/float32_detour.h"
#include "kernels/matmul.h"
#include "kernels/norm.h"
#include "kernels/pointwise.h"
#include "kernels/pool.h"
#include "kernels/reduce.h"
#include "kernels/softmax.h"
#include "list_walk.h"

namespace strider {
namespace {

using testing::ListWalk;
using testing::walk_list;

const ScalarType kDtypes[] = {kFloat, kBFloat16, kDouble};

Tensor make(IntArrayRef sizes, ScalarType dtype, MemoryFormat fmt = MemoryFormat::Contiguous) {
  return randn(sizes, kFloat).to(dtype).contiguous(fmt);
}
Tensor like(const Tensor& t, ScalarType dtype) {
  return empty_strided(t.sizes(), t.strides(), TensorOptions().dtype(dtype));
}
double tolerance(ScalarType dtype) { return dtype == kBFloat16 ? 5e-2 : 1e-4; }
// oneDNN entries that take bfloat16: native ones where oneDNN has bfloat16 kernels for this CPU
// (AVX-512), and the float32 detour everywhere (it widens plain-layout batches to channels-last).
int onednn_bfloat16_entries() { return kernels::onednn_has_bfloat16() ? 2 : 1; }
// Where oneDNN should have accepted (the reference counted too), and plain-layout bfloat16 batch
// norm also through the channels-last detour where bfloat16 is native.
int expected_accepting(ScalarType dtype) {
  return dtype == kDouble ? 1 : 1 + (dtype == kBFloat16 ? onednn_bfloat16_entries() : 1);
}
// The channels-last detour takes plain-layout data whose layout oneDNN computes slowly:
// bfloat16 where it is native (AVX-512), float32 below AVX-512. In training mode strider's own
// kernels (one per layout) take bfloat16 and float32 everywhere.
int expected_accepting_batch_norm(ScalarType dtype, MemoryFormat fmt, bool training) {
  const bool avx512 = kernels::onednn_has_bfloat16();
  const bool plain = fmt == MemoryFormat::Contiguous;
  const bool slow_plain = dtype == kBFloat16 ? avx512 : dtype == kFloat && !avx512;
  const bool cpu_training = training && (dtype == kBFloat16 || dtype == kFloat);
  return expected_accepting(dtype) + (plain && slow_plain ? 1 : 0) + (cpu_training ? 1 : 0);
}

// With relu (and a residual), every entry computes relu(batch_norm (+ residual)) and the ReLU's
// gradient: strider's training kernels fused, the others wrapped. Its bias keeps each channel's
// output on one side of zero (+-5 against normalized values within +-2 for weights within +-0.5,
// and residuals within +-0.5), so all entries agree on the mask; the fused kernels' mask on
// mixed signs is BatchNormRelu.FusedKernelsEqualTheUnfusedOpsBitwise's.
TEST(NormImplementationList, BatchNormMatchesTheReference) {
  manual_seed(5);
  for (ScalarType dtype : kDtypes)
    for (MemoryFormat fmt : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast})
      for (bool training : {true, false})
        for (int variant : {0, 1, 2, 3}) {  // plain, affine, affine with relu, and a residual
          const bool affine = variant > 0, relu = variant >= 2;
          SCOPED_TRACE(detail::str(dtype, " ", fmt, training ? " training" : " eval", affine ? " affine" : "",
                                   relu ? " relu" : "", variant == 3 ? " residual" : ""));
          const ScalarType st = kernels::norm_stat_dtype(dtype);
          Tensor in = make({3, 5, 4, 6}, dtype, fmt), go = make({3, 5, 4, 6}, dtype, fmt);
          Tensor w = affine ? clamp(make({5}, st), -0.5, 0.5) : Tensor();
          Tensor b = relu ? tensor(std::vector<double>{5.0, -5.0, 5.0, -5.0, 5.0}, st) : affine ? make({5}, st) : Tensor();
          Tensor run_mean = make({5}, st), run_var = make({5}, st).abs() + 0.5;
          Tensor residual = variant == 3 ? (clamp(make({3, 5, 4, 6}, kFloat), -5, 5) * 0.1).to(dtype).contiguous(fmt) : Tensor();
          ListWalk<kernels::BatchNormForward> fwd{
              [&] {
                return kernels::BatchNormForward{like(in, dtype), in, w, b, training ? empty({5}, st) : run_mean.clone(),
                                                 training ? empty({5}, st) : run_var.clone(), training, 1e-5, relu,
                                                 residual};
              },
              [](const kernels::BatchNormForward& p) { return std::vector<Tensor>{p.out, p.mean, p.var}; },
              tolerance(dtype)};
          // Evaluation mode in float32/bfloat16 also has the one-pass cpu kernel.
          const int cpu_inference = !training && dtype != kDouble ? 1 : 0;
          EXPECT_EQ(walk_list(kernels::batch_norm_forward_implementations(), fwd),
                    expected_accepting_batch_norm(dtype, fmt, training) + cpu_inference);
          // The statistics and relu_out from the reference, or, where a training kernel takes the
          // problem, from that kernel: only then does its backward (which recomputes the ReLU's
          // mask) accept, and the walk compares it too.
          kernels::BatchNormForward stats = fwd.fresh();
          const char* stats_by = "ref";
          for (const auto& e : kernels::batch_norm_forward_implementations())
            if (std::string(e.name).rfind("cpu_", 0) == 0 && std::string(e.name) != "cpu_inference" && e.rejects(stats).empty()) {
              stats_by = e.name;
              break;
            }
          for (const auto& e : kernels::batch_norm_forward_implementations())
            if (std::string(e.name) == stats_by) e.run(stats);
          if (relu) {
            const double zero_share = eq(stats.out, 0.0).to(kDouble).mean().item<double>();
            EXPECT_GT(zero_share, 0.3);
            EXPECT_LT(zero_share, 0.5);
          }
          ListWalk<kernels::BatchNormBackward> bwd{
              [&] {
                return kernels::BatchNormBackward{like(in, dtype), affine ? empty({5}, st) : Tensor(),
                                                  affine ? empty({5}, st) : Tensor(), go, in, w, stats.mean, stats.var,
                                                  training, 1e-5, relu ? stats.out : Tensor(), relu ? b : Tensor(),
                                                  residual, residual.defined() ? like(in, dtype) : Tensor(),
                                                  relu ? stats_by : nullptr};
              },
              [](const kernels::BatchNormBackward& p) {
                return std::vector<Tensor>{p.grad_in, p.grad_weight.defined() ? p.grad_weight : zeros({1}),
                                           p.grad_bias.defined() ? p.grad_bias : zeros({1}),
                                           p.grad_residual.defined() ? p.grad_residual : zeros({1})};
              },
              tolerance(dtype) * 4};
          EXPECT_EQ(walk_list(kernels::batch_norm_backward_implementations(), bwd), expected_accepting_batch_norm(dtype, fmt, training));
        }
}

// The channels-last training kernel takes a batch whose size-1 dims carry strides no layout gives
// them (the ops layer normalizes those; a caller of the list need not), and matches the reference.
TEST(NormImplementationList, ChannelsLastTrainingTakesAnyStrideOnSizeOneDims) {
  manual_seed(11);
  auto odd_unit_strides = [](const Tensor& t) {
    DimVector st(t.strides().begin(), t.strides().end());
    for (size_t d = 0; d < st.size(); ++d)
      if (t.sizes()[d] == 1) st[d] = 1000;
    return t.as_strided(t.sizes(), st);
  };
  auto entry = [](const auto& list) {
    for (const auto& impl : list)
      if (std::string(impl.name) == "cpu_channels_last") return &impl;
    ADD_FAILURE() << "no cpu_channels_last entry";
    return &list.back();
  };
  for (ScalarType dtype : {kFloat, kBFloat16}) {
    SCOPED_TRACE(detail::str(dtype));
    Tensor in = odd_unit_strides(make({1, 6, 1, 5}, dtype, MemoryFormat::ChannelsLast));
    Tensor go = odd_unit_strides(make({1, 6, 1, 5}, dtype, MemoryFormat::ChannelsLast));
    Tensor w = make({6}, kFloat), b = make({6}, kFloat);
    auto forward = [&] {
      return kernels::BatchNormForward{like(in, dtype), in, w, b, empty({6}, kFloat), empty({6}, kFloat), true, 1e-5};
    };
    const auto* fwd = entry(kernels::batch_norm_forward_implementations());
    kernels::BatchNormForward got = forward(), want = forward();
    ASSERT_EQ(fwd->rejects(got), "");
    fwd->run(got);
    kernels::batch_norm_forward_implementations().back().run(want);
    for (auto [g, r] : {std::pair{got.out, want.out}, {got.mean, want.mean}, {got.var, want.var}})
      EXPECT_TRUE(testing::all_close(g, r, tolerance(dtype), tolerance(dtype)));
    auto backward = [&] {
      return kernels::BatchNormBackward{like(in, dtype), empty({6}, kFloat), empty({6}, kFloat), go, in, w,
                                        want.mean, want.var, true, 1e-5};
    };
    const auto* bwd = entry(kernels::batch_norm_backward_implementations());
    kernels::BatchNormBackward bgot = backward(), bwant = backward();
    ASSERT_EQ(bwd->rejects(bgot), "");
    bwd->run(bgot);
    kernels::batch_norm_backward_implementations().back().run(bwant);
    for (auto [g, r] : {std::pair{bgot.grad_in, bwant.grad_in}, {bgot.grad_weight, bwant.grad_weight},
                        {bgot.grad_bias, bwant.grad_bias}})
      EXPECT_TRUE(testing::all_close(g, r, tolerance(dtype), tolerance(dtype)));
  }
}

TEST(NormImplementationList, LayerNormMatchesTheReference) {
  manual_seed(6);
  for (ScalarType dtype : kDtypes)
    for (bool affine : {true, false}) {
      SCOPED_TRACE(detail::str(dtype, affine ? " affine" : ""));
      const ScalarType st = kernels::norm_stat_dtype(dtype);
      Tensor in = make({7, 33}, dtype), go = make({7, 33}, dtype);
      Tensor w = affine ? make({33}, st) : Tensor(), b = affine ? make({33}, st) : Tensor();
      ListWalk<kernels::LayerNormForward> fwd{
          [&] { return kernels::LayerNormForward{like(in, dtype), in, w, b, empty({7}, st), empty({7}, st), 1e-5}; },
          [](const kernels::LayerNormForward& p) { return std::vector<Tensor>{p.out, p.mean, p.var}; },
          tolerance(dtype)};
      EXPECT_EQ(walk_list(kernels::layer_norm_forward_implementations(), fwd), expected_accepting(dtype));
      kernels::LayerNormForward stats = fwd.fresh();
      kernels::layer_norm_forward_implementations().back().run(stats);
      ListWalk<kernels::LayerNormBackward> bwd{
          [&] {
            return kernels::LayerNormBackward{like(in, dtype), affine ? empty({33}, st) : Tensor(),
                                              affine ? empty({33}, st) : Tensor(), go, in, w, stats.mean, stats.var, 1e-5};
          },
          [](const kernels::LayerNormBackward& p) {
            return std::vector<Tensor>{p.grad_in, p.grad_weight.defined() ? p.grad_weight : zeros({1}),
                                       p.grad_bias.defined() ? p.grad_bias : zeros({1})};
          },
          tolerance(dtype) * 4};
      EXPECT_EQ(walk_list(kernels::layer_norm_backward_implementations(), bwd), expected_accepting(dtype));
    }
}

TEST(PoolImplementationList, EveryForwardAndBackwardPairMatchesTheReference) {
  manual_seed(7);
  for (ScalarType dtype : kDtypes)
    for (MemoryFormat fmt : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast})
      for (bool is_max : {true, false}) {
        SCOPED_TRACE(detail::str(dtype, " ", fmt, is_max ? " max" : " avg"));
        kernels::PoolParams p{.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 1}, .is_max = is_max};
        Tensor in = make({2, 3, 7, 6}, dtype, fmt), out = make({2, 3, 4, 5}, dtype, fmt);
        const auto& fwd = kernels::pool_forward_implementations();
        const auto& bwd = kernels::pool_backward_implementations();
        auto run_forward = [&](size_t i, kernels::PoolSaved& saved) {
          Tensor o = like(out, dtype);
          kernels::PoolForward f{o, in, p, false, &saved};
          if (!fwd[i].rejects(f).empty()) return Tensor();
          fwd[i].run(f);
          return o;
        };
        kernels::PoolSaved ref_saved;
        Tensor want = run_forward(fwd.size() - 1, ref_saved);
        Tensor go = make(want.sizes(), dtype, fmt);
        Tensor want_gi = like(in, dtype);
        bwd.back().run({want_gi, go, p, ref_saved});
        int pairs = 0;
        for (size_t i = 0; i < fwd.size(); ++i) {
          kernels::PoolSaved saved;
          Tensor got = run_forward(i, saved);
          if (!got.defined()) continue;
          EXPECT_TRUE(testing::all_close(got, want, tolerance(dtype), tolerance(dtype))) << "forward " << fwd[i].name;
          for (const auto& b : bwd) {
            kernels::PoolBackward problem{like(in, dtype), go, p, saved};
            if (!b.rejects(problem).empty()) continue;
            b.run(problem);
            ++pairs;
            EXPECT_TRUE(testing::all_close(problem.grad_in, want_gi, tolerance(dtype), tolerance(dtype)))
                << "forward " << fwd[i].name << ", backward " << b.name;
          }
        }
        // Every oneDNN max-pooling forward's workspace can be read by every oneDNN backward, and
        // the reference's indices by the reference; average pooling needs neither, so every
        // forward pairs with every backward.
        const int onednn = dtype == kDouble ? 0 : dtype == kBFloat16 ? onednn_bfloat16_entries() : 1;
        EXPECT_EQ(pairs, is_max ? onednn * onednn + 1 : (onednn + 1) * (onednn + 1));
      }
}

// PyTorch propagates NaN through max pooling (the last NaN of a window wins, and takes the
// gradient), keeps -inf, and gives -inf for a window wholly in the padding; oneDNN's max pooling
// dropped NaN and gave float's lowest, so those inputs go to the reference. Values from PyTorch 1.13.
TEST(PoolImplementationList, MaxPoolingKeepsNaNAndNegativeInfinityAsPyTorch) {
  const double nan = std::nan(""), inf = INFINITY;
  const Tensor x = tensor(std::vector<double>{nan, 1, 2, 3}).view({1, 1, 2, 2});
  for (const Tensor& in : {x, x.to(MemoryFormat::ChannelsLast), x.to(kBFloat16), x.to(kBFloat16).to(MemoryFormat::ChannelsLast)}) {
    SCOPED_TRACE(detail::str(in.dtype(), " ", in.suggest_memory_format()));
    EXPECT_TRUE(std::isnan(max_pool2d(in, {2}).item().to_double()));
    EXPECT_TRUE(std::isnan(max_pool3d(in.to(kFloat).view({1, 1, 1, 2, 2}), {1, 2, 2}).item().to_double()));
    Tensor leaf = in.to(kFloat).clone().requires_grad_(true);
    max_pool2d(leaf, {2}).sum().backward();
    EXPECT_EQ(testing::values(leaf.grad()), (std::vector<double>{1, 0, 0, 0}));
  }
  const auto [two_nans, index] = max_pool2d_with_indices(tensor(std::vector<double>{nan, 1, nan, 3}).view({1, 1, 2, 2}), {2});
  EXPECT_TRUE(std::isnan(two_nans.item().to_double()));
  EXPECT_EQ(index.item().to_long(), 2);
  EXPECT_EQ(max_pool2d(full({1, 1, 2, 2}, -inf), {2}).item().to_double(), -inf);
  EXPECT_EQ(max_pool2d(full({1, 1, 2, 2}, -inf).to(kBFloat16), {2}).item().to_double(), -inf);
  EXPECT_EQ(max_pool2d(arange(0, 4, 1, kFloat).view({1, 1, 2, 2}), {2}, {1}, {1}, {3}).item().to_double(), -inf);
  EXPECT_EQ(testing::values(max_pool2d(arange(0, 9, 1, kFloat).view({1, 1, 3, 3}), {2}, {1}, {1}, {3})),
            (std::vector<double>{8, 6, 2, 0}));
  // Finite inputs still take oneDNN.
  EXPECT_TRUE(kernels::pool_forward_implementations()[0]
                  .rejects({empty({1, 1, 1, 1}), arange(0, 4, 1, kFloat).view({1, 1, 2, 2}),
                            kernels::PoolParams{.kernel = {2, 2}, .stride = {2, 2}, .padding = {0, 0}, .dilation = {1, 1}}})
                  .empty());
}

// A 1x1 convolution's backward passes: on AMX their bfloat16 products are oneDNN matmuls over
// channels-last pixels (views, or copies of plain-layout data), checked against the reference in
// both layouts and with a batch or spatial size of 1 (dims whose strides are arbitrary).
TEST(ConvImplementationList, OneByOneBackwardPassesMatchTheReference) {
  manual_seed(9);
  for (ScalarType dtype : kDtypes)
    for (MemoryFormat fmt : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast})
      for (DimVector in_sizes : {DimVector{2, 8, 5, 6}, DimVector{1, 8, 1, 7}})
        for (DimVector stride : {DimVector{1, 1}, DimVector{2, 2}, DimVector{2, 3}}) {
          SCOPED_TRACE(detail::str(dtype, " ", fmt, " ", IntArrayRef(in_sizes), " stride ", IntArrayRef(stride)));
          Tensor in = make(in_sizes, dtype, fmt);
          const int64_t oh = (in_sizes[2] - 1) / stride[0] + 1, ow = (in_sizes[3] - 1) / stride[1] + 1;
          Tensor go = make({in_sizes[0], 12, oh, ow}, dtype, fmt);
          // Size-1 dims with strides no layout would give them: still dense, still a view.
          auto odd_unit_strides = [](const Tensor& t) {
            DimVector st(t.strides().begin(), t.strides().end());
            for (size_t d = 0; d < st.size(); ++d)
              if (t.sizes()[d] == 1) st[d] = 1000;
            return t.as_strided(t.sizes(), st);
          };
          in = odd_unit_strides(in);
          go = odd_unit_strides(go);
          Tensor w = make({12, 8, 1, 1}, dtype, fmt);
          kernels::ConvParams p{stride, {0, 0}, {1, 1}, {0, 0}};
          ListWalk<kernels::ConvBackwardWeight> walk{
              [&] { return kernels::ConvBackwardWeight{empty({12, 8, 1, 1}, dtype), Tensor(), in, go, p}; },
              [](const kernels::ConvBackwardWeight& c) { return std::vector<Tensor>{c.grad_weight}; },
              dtype == kBFloat16 ? 1e-1 : 1e-4};
          const bool amx_matmul = dtype == kBFloat16 && kernels::cpu_has(kernels::Isa::amx_bf16);
          // The channels-last detour takes plain-layout data oneDNN computes slowly (as for batch norm).
          const bool avx512 = kernels::onednn_has_bfloat16();
          const bool nhwc_detour =
              fmt == MemoryFormat::Contiguous && (dtype == kBFloat16 ? avx512 : dtype == kFloat && !avx512);
          EXPECT_EQ(walk_list(kernels::conv_backward_weight_implementations(), walk),
                    expected_accepting(dtype) + (amx_matmul ? 1 : 0) + (nhwc_detour ? 1 : 0));
          // grad_in starts as garbage: the pixels a strided convolution skips must be written zero.
          ListWalk<kernels::ConvBackwardInput> walk_input{
              [&] { return kernels::ConvBackwardInput{empty_like(in).fill_(7.0), go, w, p}; },
              [](const kernels::ConvBackwardInput& c) { return std::vector<Tensor>{c.grad_in}; },
              dtype == kBFloat16 ? 1e-1 : 1e-4};
          EXPECT_EQ(walk_list(kernels::conv_backward_input_implementations(), walk_input),
                    expected_accepting(dtype) + (amx_matmul ? 1 : 0) + (nhwc_detour ? 1 : 0));
        }
}

// Weight gradients of larger kernels through the im2col matrix: padding (zero columns), strides,
// dilation, a non-square kernel, both layouts; output rows under 16 pixels take the matmul on
// AMX, wider ones stay with oneDNN's convolution.
TEST(ConvImplementationList, WeightGradientsAsMatmulMatchTheReference) {
  manual_seed(10);
  struct Case {
    DimVector in, kernel, stride, padding, dilation;
  };
  const std::vector<Case> cases = {
      {{2, 8, 7, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},  // 7x9 out, zero border columns
      {{2, 8, 9, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 1}},  // stride 2
      {{1, 8, 8, 10}, {3, 3}, {1, 1}, {2, 2}, {2, 2}},  // dilation 2
      {{2, 8, 6, 7}, {1, 3}, {2, 1}, {0, 1}, {1, 1}},   // non-square, padded along the width only
      {{2, 1, 7, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},   // one input channel: the weight's channel
      {{2, 1, 7, 5}, {3, 1}, {1, 1}, {1, 0}, {1, 1}},   //   stride is free in the plain layout
      {{1, 8, 7, 7}, {5, 5}, {1, 1}, {0, 0}, {1, 1}},   // unpadded, 3x3 out
      {{1, 8, 5, 20}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},  // 20 pixels a row: oneDNN's convolution
  };
  for (ScalarType dtype : kDtypes)
    for (MemoryFormat fmt : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast})
      for (const Case& c : cases) {
        SCOPED_TRACE(detail::str(dtype, " ", fmt, " in ", IntArrayRef(c.in), " kernel ", IntArrayRef(c.kernel), " stride ",
                                 IntArrayRef(c.stride), " padding ", IntArrayRef(c.padding), " dilation ",
                                 IntArrayRef(c.dilation)));
        DimVector out_hw;
        for (size_t d = 0; d < 2; ++d)
          out_hw.push_back((c.in[2 + d] + 2 * c.padding[d] - c.dilation[d] * (c.kernel[d] - 1) - 1) / c.stride[d] + 1);
        Tensor in = make(c.in, dtype, fmt);
        Tensor go = make({c.in[0], 6, out_hw[0], out_hw[1]}, dtype, fmt);
        const DimVector w_sizes{6, c.in[1], c.kernel[0], c.kernel[1]};
        kernels::ConvParams p{c.stride, c.padding, c.dilation, {0, 0}};
        ListWalk<kernels::ConvBackwardWeight> walk{
            [&] {
              return kernels::ConvBackwardWeight{empty(w_sizes, TensorOptions().dtype(dtype).memory_format(fmt)), Tensor(),
                                                 in, go, p};
            },
            [](const kernels::ConvBackwardWeight& w) { return std::vector<Tensor>{w.grad_weight}; },
            dtype == kBFloat16 ? 1e-1 : 1e-4};
        const bool amx_matmul = dtype == kBFloat16 && kernels::cpu_has(kernels::Isa::amx_bf16) && out_hw[1] < 16;
        const bool avx512 = kernels::onednn_has_bfloat16();
        // A one-channel batch is channels-last as well: the detour has nothing to do.
        const bool nhwc_detour = fmt == MemoryFormat::Contiguous && !in.is_contiguous(MemoryFormat::ChannelsLast) &&
                                 (dtype == kBFloat16 ? avx512 : dtype == kFloat && !avx512);
        EXPECT_EQ(walk_list(kernels::conv_backward_weight_implementations(), walk),
                  expected_accepting(dtype) + (amx_matmul ? 1 : 0) + (nhwc_detour ? 1 : 0));
      }
}

// A strided convolution's input gradient as one stride-1 convolution per phase (AMX, bfloat16):
// every entry that accepts matches the reference, in both layouts, for phases with one to three
// taps per dim, odd sizes whose last phase is shorter, unequal strides, and padding that leaves
// a phase padded at both ends; where a phase would need negative padding, a kernel
// smaller than the stride, or dilation, the entry declines.
TEST(ConvImplementationList, StridedInputGradientsAsPhaseConvolutionsMatchTheReference) {
  manual_seed(11);
  struct Case {
    DimVector in, kernel, stride, padding, dilation;
    bool phases;  // whether the phase entry takes it (on an AMX CPU, in bfloat16)
  };
  const std::vector<Case> cases = {
      {{2, 8, 10, 10}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true},   // ResNet's 3x3 stride 2
      {{2, 8, 9, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true},    // odd sizes
      {{1, 8, 11, 9}, {5, 5}, {2, 2}, {2, 2}, {1, 1}, true},    // 3 and 2 taps per phase
      {{2, 8, 12, 13}, {3, 3}, {2, 1}, {1, 1}, {1, 1}, true},   // unequal strides: one phase along W
      {{2, 8, 12, 13}, {3, 3}, {2, 3}, {1, 1}, {1, 1}, false},  // a phase would end before grad_out
      {{2, 8, 8, 8}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true},     // one tap per phase
      {{1, 8, 9, 9}, {3, 3}, {2, 2}, {0, 0}, {1, 1}, true},     // unpadded: a phase padded at both ends
      {{1, 8, 9, 9}, {3, 3}, {2, 2}, {2, 2}, {1, 1}, false},    // a phase would start before grad_out
      {{1, 8, 9, 9}, {2, 2}, {3, 3}, {0, 0}, {1, 1}, false},    // a phase no tap reaches
      {{1, 8, 11, 11}, {3, 3}, {2, 2}, {2, 2}, {2, 2}, false},  // dilated
  };
  for (ScalarType dtype : {kBFloat16, kFloat})
    for (MemoryFormat fmt : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast})
      for (const Case& c : cases) {
        SCOPED_TRACE(detail::str(dtype, " ", fmt, " in ", IntArrayRef(c.in), " kernel ", IntArrayRef(c.kernel), " stride ",
                                 IntArrayRef(c.stride), " padding ", IntArrayRef(c.padding)));
        DimVector out_hw;
        for (size_t d = 0; d < 2; ++d)
          out_hw.push_back((c.in[2 + d] + 2 * c.padding[d] - c.dilation[d] * (c.kernel[d] - 1) - 1) / c.stride[d] + 1);
        Tensor go = make({c.in[0], 6, out_hw[0], out_hw[1]}, dtype, fmt);
        Tensor w = make({6, c.in[1], c.kernel[0], c.kernel[1]}, dtype, fmt);
        kernels::ConvParams p{c.stride, c.padding, c.dilation, {0, 0}};
        ListWalk<kernels::ConvBackwardInput> walk{
            [&] {
              // Filled with garbage: every pixel must be written.
              Tensor gi = full(c.in, 7.0, TensorOptions().dtype(dtype)).contiguous(fmt);
              return kernels::ConvBackwardInput{gi, go, w, p};
            },
            [](const kernels::ConvBackwardInput& b) { return std::vector<Tensor>{b.grad_in}; },
            dtype == kBFloat16 ? 1e-1 : 1e-4};
        walk_list(kernels::conv_backward_input_implementations(), walk);
        const auto& list = kernels::conv_backward_input_implementations();
        auto entry = std::find_if(list.begin(), list.end(), [](const auto& e) { return std::string(e.name) == "onednn_amx_phases"; });
        ASSERT_NE(entry, list.end());
        const bool expected = c.phases && dtype == kBFloat16 && kernels::cpu_has(kernels::Isa::amx_bf16);
        EXPECT_EQ(entry->rejects(walk.fresh()).empty(), expected) << entry->rejects(walk.fresh());
      }
  if (!kernels::cpu_has(kernels::Isa::amx_bf16)) GTEST_SKIP() << "no AMX here: the phase entry declined every case";
}

TEST(MatmulImplementationList, TransposedAndBatchedOperandsMatchTheReference) {
  manual_seed(8);
  for (ScalarType dtype : kDtypes)
    for (bool transposed : {false, true})
      for (bool bias : {false, true}) {
        SCOPED_TRACE(detail::str(dtype, transposed ? " transposed" : "", bias ? " bias" : ""));
        Tensor a = make({2, 5, 9}, dtype), w = transposed ? make({2, 4, 9}, dtype).transpose(1, 2) : make({2, 9, 4}, dtype);
        Tensor b = bias ? make({4}, dtype) : Tensor();
        ListWalk<kernels::Matmul> walk{[&] { return kernels::Matmul{empty({2, 5, 4}, dtype), a, w, b}; },
                                       [](const kernels::Matmul& p) { return std::vector<Tensor>{p.out}; },
                                       tolerance(dtype)};
        EXPECT_EQ(walk_list(kernels::matmul_implementations(), walk), expected_accepting(dtype));
      }
}

TEST(AttentionImplementationList, EveryAcceptingEntryMatchesTheReference) {
  manual_seed(9);
  for (ScalarType dtype : kDtypes)
    for (bool causal : {false, true}) {
      SCOPED_TRACE(detail::str(dtype, causal ? " causal" : ""));
      const ScalarType lse_dtype = dtype == kDouble ? kDouble : kFloat;
      Tensor q = make({2, 3, 70, 20}, dtype), k = make({2, 3, 90, 20}, dtype), v = make({2, 3, 90, 20}, dtype);
      ListWalk<kernels::AttentionForward> fwd{
          [&] { return kernels::AttentionForward{like(q, dtype), empty({2, 3, 70}, lse_dtype), q, k, v, 0.4, causal}; },
          [](const kernels::AttentionForward& p) { return std::vector<Tensor>{p.out, p.lse}; }, tolerance(dtype)};
      // Bfloat16 products take bfloat16: cpu_amx where the tiles may be used, cpu_bf16 where the
      // CPU has AVX512_BF16 and not AMX (kernels_capped_avx512_bf16 runs it on an AMX CPU); cpu
      // takes the rest.
      const bool bf16_products =
          dtype == kBFloat16 && (kernels::cpu_has(kernels::Isa::amx_bf16) ||
                                 (kernels::cpu_has(kernels::Isa::avx512_bf16) && !kernels::cpu_reports_amx()));
      const int accepting = dtype == kDouble ? 1 : bf16_products ? 3 : 2;
      EXPECT_EQ(walk_list(kernels::attention_forward_implementations(), fwd), accepting);
      kernels::AttentionForward f = fwd.fresh();
      kernels::attention_forward_implementations().back().run(f);
      Tensor go = make({2, 3, 70, 20}, dtype);
      ListWalk<kernels::AttentionBackward> bwd{
          [&] {
            return kernels::AttentionBackward{like(q, dtype), like(k, dtype), like(v, dtype), go, q, k, v, f.out,
                                              f.lse, 0.4, causal};
          },
          [](const kernels::AttentionBackward& p) { return std::vector<Tensor>{p.dq, p.dk, p.dv}; },
          tolerance(dtype)};
      EXPECT_EQ(walk_list(kernels::attention_backward_implementations(), bwd), accepting);
    }
}

TEST(ImplementationList, TwoEntryFamiliesAreWalkedByTheConformanceTests) {
  // conformance_test.cpp runs each elementwise, copy, reduction and softmax op once with the
  // first accepting implementation and once with the reference: for a list of two, that is the
  // whole walk. A third implementation needs walk_list (list_walk.h) in those tests.
  EXPECT_EQ(kernels::unary_implementations().size(), 2u);
  EXPECT_EQ(kernels::binary_implementations().size(), 2u);
  EXPECT_EQ(kernels::where_implementations().size(), 2u);
  EXPECT_EQ(kernels::addcmul_implementations().size(), 2u);
  EXPECT_EQ(kernels::copy_implementations().size(), 2u);
  EXPECT_EQ(kernels::fill_implementations().size(), 2u);
  EXPECT_EQ(kernels::reduce_implementations().size(), 2u);
  EXPECT_EQ(kernels::softmax_implementations().size(), 2u);
}

TEST(ImplementationList, AReferenceThatCannotRunIsAClearError) {
  // A max pooling forward in oneDNN leaves a workspace; the reference backward needs indices.
  Tensor x = randn({1, 2, 6, 6}).requires_grad_();
  Tensor y = max_pool2d(x, {2, 2});
  KernelPreferenceGuard ref(KernelPreference::Reference);
  try {
    y.sum().backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs the forward's indices"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace strider
