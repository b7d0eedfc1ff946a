// Batch norm with its ReLU, and a residual added before it, fused (ops::batch_norm's relu and
// residual, kernels/cpu/batch_norm_relu.h): strider's training kernels, which recompute the
// ReLU's mask in the backward instead of reading the output, give exactly what the unfused ops
// give, in both layouts and dtypes, at the edges of the mask (outputs that round to zero in
// bfloat16, -0, exact zeros, a residual that cancels the batch norm's output).
#include <gtest/gtest.h>

#include <limits>

#include <strider/ops/factory.h>
#include <strider/ops/kernel_choice.h>
#include <strider/ops/norm.h>
#include <strider/ops/pointwise.h>

#include "kernels/cpu/batch_norm_relu.h"
#include "support/compare.h"
#include "support/layouts.h"

namespace strider {
namespace {

using testing::all_close;

struct Layout {
  std::vector<int64_t> sizes;
  MemoryFormat fmt;
  const char* kernel;  // the training kernel that takes it
};

// Channels 0-3 have weight 0, so their output is their bias everywhere: a float32 denormal that
// bfloat16 rounds to 0, -0, 0 and the smallest positive bfloat16. The rest are random, with
// normalized values near 0 among their thousands.
Tensor edge_bias(int64_t C) {
  Tensor b = testing::sample({C}, kFloat, 43);
  float* p = b.data_ptr<float>();
  p[0] = std::numeric_limits<float>::denorm_min();
  p[1] = -0.0f;
  p[2] = 0.0f;
  p[3] = 9.2e-41f;  // about 2^-133, bfloat16's smallest positive value
  return b;
}

TEST(BatchNormRelu, FusedKernelsEqualTheUnfusedOpsBitwise) {
  const std::vector<Layout> layouts = {
      {{4, 8, 9, 11}, MemoryFormat::Contiguous, "cpu_plain"},
      {{2, 6, 3, 5, 7}, MemoryFormat::Contiguous, "cpu_plain"},
      {{5, 24, 31, 29}, MemoryFormat::ChannelsLast, "cpu_channels_last"},  // many row blocks
      {{3, 8, 5, 6, 7}, MemoryFormat::ChannelsLast3d, "cpu_channels_last"},
  };
  for (ScalarType dtype : {kFloat, kBFloat16})
    for (const Layout& l : layouts)
      for (bool with_residual : {false, true}) {
      SCOPED_TRACE(detail::str(dtype, " ", IntArrayRef(l.sizes), " ", l.fmt, with_residual ? " residual" : ""));
      const int64_t C = l.sizes[1];
      Tensor x = testing::sample(l.sizes, kFloat, 41).to(dtype).contiguous(l.fmt);
      Tensor go = testing::sample(l.sizes, kFloat, 42).to(dtype).contiguous(l.fmt);
      Tensor w = testing::sample({C}, kFloat, 44), b = edge_bias(C);
      for (int64_t c = 0; c < 4; ++c) w.data_ptr<float>()[c] = 0.0f;
      Tensor rm = zeros({C}), rv = ones({C}), rm_fused = zeros({C}), rv_fused = ones({C});
      // Channels 0-3 get no residual (their edges stay); elsewhere it is mostly random, and in
      // places minus the batch norm's stored output, so the sum is exactly 0 there.
      Tensor residual, cancelled;  // cancelled: where the residual is minus the stored output
      if (with_residual) {
        auto ref = ops::batch_norm(x, w, b, Tensor(), Tensor(), true, 0.1, 1e-5);
        Tensor r = testing::sample(l.sizes, kFloat, 45).to(dtype).contiguous(l.fmt);
        Tensor cancel = ops::neg(ref.out).contiguous(l.fmt);
        Tensor pick = ops::gt(testing::sample(l.sizes, kFloat, 46), 0.5);
        residual = ops::where(pick, cancel, r).to(dtype).contiguous(l.fmt);
        Tensor channel = ops::lt(arange(C).reshape({1, C, 1, 1}), 4.0);
        if (l.sizes.size() == 5) channel = channel.reshape({1, C, 1, 1, 1});
        residual = ops::where(channel, zeros({1}, dtype), residual).contiguous(l.fmt);
        cancelled = ops::logical_and(pick, ops::logical_not(channel));
      }

      ::testing::internal::CaptureStderr();
      set_kernel_verbose(true);
      auto fused = ops::batch_norm(x, w, b, rm_fused, rv_fused, true, 0.1, 1e-5, /*relu=*/true, residual);
      auto fused_grads = ops::batch_norm_relu_backward(go, x, w, b, residual, fused, true,
                                                       1e-5, {true, true, true, with_residual});
      set_kernel_verbose(false);
      const std::string log = ::testing::internal::GetCapturedStderr();
      EXPECT_NE(log.find(std::string("batch_norm -> ") + l.kernel), std::string::npos) << log;
      EXPECT_NE(log.find(std::string("batch_norm_backward -> ") + l.kernel), std::string::npos) << log;

      auto plain = ops::batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5);
      Tensor y = ops::relu(with_residual ? ops::add(plain.out, residual) : plain.out);
      Tensor relu_grad = ops::threshold_backward(go, y);
      auto grads = ops::batch_norm_backward(relu_grad, x, w, plain.mean, plain.var, true, 1e-5, {true, true, true});
      if (with_residual) {
        EXPECT_TRUE(all_close(fused_grads.residual, relu_grad, 0, 0)) << "dresidual";
        // The residual cancels the stored output exactly where picked (the rest of the channels).
        Tensor sum = ops::add(plain.out, residual);
        EXPECT_TRUE(ops::equal(ops::where(cancelled, sum, zeros({1}, dtype)).to(kDouble), zeros(l.sizes, kDouble)));
        const double nonzero_cancelled = ops::logical_and(cancelled, ops::ne(plain.out, 0.0)).to(kDouble).sum().item<double>();
        EXPECT_GT(nonzero_cancelled, 100.0);
      }

      EXPECT_EQ(fused.out.strides(), y.strides());
      EXPECT_TRUE(all_close(fused.out, y, 0, 0)) << "out";
      EXPECT_TRUE(all_close(fused.mean, plain.mean, 0, 0)) << "mean";
      EXPECT_TRUE(all_close(fused.var, plain.var, 0, 0)) << "var";
      EXPECT_TRUE(all_close(rm_fused, rm, 0, 0) && all_close(rv_fused, rv, 0, 0)) << "running statistics";
      EXPECT_TRUE(all_close(fused_grads.input, std::get<0>(grads), 0, 0)) << "dx";
      EXPECT_TRUE(all_close(fused_grads.weight, std::get<1>(grads), 0, 0)) << "dw";
      EXPECT_TRUE(all_close(fused_grads.bias, std::get<2>(grads), 0, 0)) << "db";
      // The edge channels: the denormal bias survives in float32 only; the others pass no gradient
      // but the smallest bfloat16, which does.
      Tensor db = fused_grads.bias, g_sum = go.to(kDouble).sum({0, 2, 3});
      if (l.sizes.size() == 4) {
        EXPECT_EQ(db.data_ptr<float>()[0] == 0.0f, dtype == kBFloat16);
        EXPECT_EQ(db.data_ptr<float>()[1], 0.0f);
        EXPECT_EQ(db.data_ptr<float>()[2], 0.0f);
        EXPECT_NE(db.data_ptr<float>()[3], 0.0f);
        EXPECT_NEAR(db.data_ptr<float>()[3], g_sum.data_ptr<double>()[3], 1e-3);
      }
    }
}

TEST(BatchNormRelu, StoredPositiveFollowsTheStoredDtype) {
  using kernels::cpu::stored_positive;
  const float tiny = std::numeric_limits<float>::denorm_min(), nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(stored_positive<float>(tiny));
  EXPECT_FALSE(stored_positive<BFloat16>(tiny));
  EXPECT_TRUE(stored_positive<BFloat16>(9.2e-41f));
  EXPECT_TRUE(stored_positive<BFloat16>(1.0f));
  for (float v : {0.0f, -0.0f, -1.0f, nan}) {
    EXPECT_FALSE(stored_positive<float>(v)) << v;
    EXPECT_FALSE(stored_positive<BFloat16>(v)) << v;
  }
  EXPECT_EQ(kernels::cpu::relu_value(-0.0f), 0.0f);
  EXPECT_FALSE(std::signbit(kernels::cpu::relu_value(-0.0f)));
  EXPECT_TRUE(std::isnan(kernels::cpu::relu_value(nan)));
}

// Evaluation mode and float64 take the unfused implementations with the ReLU wrapped around them.
TEST(BatchNormRelu, EveryOtherPathAppliesTheReluToo) {
  for (ScalarType dtype : {kFloat, kBFloat16, kDouble})
    for (bool training : {true, false}) {
      SCOPED_TRACE(detail::str(dtype, training ? " training" : " eval"));
      if (training && dtype != kDouble) continue;  // FusedKernelsEqualTheUnfusedOpsBitwise
      Tensor x = testing::sample({3, 5, 4, 6}, kFloat, 51).to(dtype).contiguous(MemoryFormat::ChannelsLast);
      Tensor go = testing::sample({3, 5, 4, 6}, kFloat, 52).to(dtype).contiguous(MemoryFormat::ChannelsLast);
      const ScalarType st = dtype == kDouble ? kDouble : kFloat;
      Tensor w = testing::sample({5}, st, 53), b = testing::sample({5}, st, 54);
      Tensor rm = testing::sample({5}, st, 55) * 0.1, rv = abs(testing::sample({5}, st, 56)) + 0.5;
      auto fused = ops::batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5, true);
      auto plain = ops::batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5);
      Tensor y = ops::relu(plain.out);
      EXPECT_TRUE(all_close(fused.out, y, 0, 0));
      auto fg = ops::batch_norm_relu_backward(go, x, w, b, Tensor(), fused, training, 1e-5,
                                              {true, true, true, false});
      auto pg = ops::batch_norm_backward(ops::threshold_backward(go, y), x, w, plain.mean, plain.var, training, 1e-5,
                                         {true, true, true});
      EXPECT_TRUE(all_close(fg.input, std::get<0>(pg), 0, 0)) << "dx";
      EXPECT_TRUE(all_close(fg.weight, std::get<1>(pg), 0, 0)) << "dw";
      // With a residual too.
      Tensor r = testing::sample({3, 5, 4, 6}, kFloat, 57).to(dtype).contiguous(MemoryFormat::ChannelsLast);
      auto fused_r = ops::batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5, true, r);
      Tensor yr = ops::relu(ops::add(plain.out, r));
      EXPECT_TRUE(all_close(fused_r.out, yr, 0, 0));
      auto fgr = ops::batch_norm_relu_backward(go, x, w, b, r, fused_r, training, 1e-5,
                                               {true, true, true, true});
      Tensor gr = ops::threshold_backward(go, yr);
      auto pgr = ops::batch_norm_backward(gr, x, w, plain.mean, plain.var, training, 1e-5, {true, true, true});
      EXPECT_TRUE(all_close(fgr.input, std::get<0>(pgr), 0, 0)) << "dx with a residual";
      EXPECT_TRUE(all_close(fgr.residual, gr, 0, 0)) << "dresidual";
    }
}

// A forward computed by another entry (here the reference, in float64 arithmetic) leaves outputs
// whose sign the training kernels' float32 recomputation may not reproduce near zero: its
// backward reads the mask from that output instead, in an entry that does not recompute.
TEST(BatchNormRelu, AForwardFromAnotherEntryIsMaskedByItsOutput) {
  for (MemoryFormat fmt : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
    SCOPED_TRACE(detail::str(fmt));
    Tensor x = testing::sample({3, 5, 4, 6}, kFloat, 61).contiguous(fmt);
    Tensor go = testing::sample({3, 5, 4, 6}, kFloat, 62).contiguous(fmt);
    Tensor w = testing::sample({5}, kFloat, 63), b = testing::sample({5}, kFloat, 64);
    ops::BatchNormResult fwd;
    {
      KernelPreferenceGuard g(KernelPreference::Reference);
      fwd = ops::batch_norm(x, w, b, Tensor(), Tensor(), true, 0.1, 1e-5, true);
    }
    EXPECT_STREQ(fwd.computed_by, "ref");
    ::testing::internal::CaptureStderr();
    set_kernel_verbose(true);
    auto got = ops::batch_norm_relu_backward(go, x, w, b, Tensor(), fwd, true, 1e-5, {true, true, true, false});
    set_kernel_verbose(false);
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(log.find("relu_out was computed by ref"), std::string::npos) << log;
    auto want = ops::batch_norm_backward(ops::threshold_backward(go, fwd.out), x, w, fwd.mean, fwd.var, true, 1e-5,
                                         {true, true, true});
    EXPECT_TRUE(all_close(got.input, std::get<0>(want), 1e-4, 1e-5));
    EXPECT_TRUE(all_close(got.bias, std::get<2>(want), 1e-4, 1e-5));
  }
}

// The backward checks what it is given against the forward's record: a forward without the
// ReLU, or a residual missing where the mask is recomputed from it (or given where the forward
// added none), is a named error instead of a gradient with the wrong mask. Where the mask is
// read from the output, the residual may be left out.
TEST(BatchNormRelu, TheBackwardChecksItsArgumentsAgainstTheForward) {
  Tensor x = testing::sample({3, 5, 4, 6}, kFloat, 71).contiguous(MemoryFormat::ChannelsLast);
  Tensor r = testing::sample({3, 5, 4, 6}, kFloat, 72).contiguous(MemoryFormat::ChannelsLast);
  Tensor go = testing::sample({3, 5, 4, 6}, kFloat, 73).contiguous(MemoryFormat::ChannelsLast);
  Tensor w = testing::sample({5}, kFloat, 74), b = testing::sample({5}, kFloat, 75);
  const std::array<bool, 4> all{true, true, true, true};
  ops::BatchNormResult plain = ops::batch_norm(x, w, b, Tensor(), Tensor(), true, 0.1, 1e-5);
  EXPECT_FALSE(plain.relu);
  EXPECT_THROW(ops::batch_norm_relu_backward(go, x, w, b, Tensor(), plain, true, 1e-5, all), Error);
  ops::BatchNormResult fused = ops::batch_norm(x, w, b, Tensor(), Tensor(), true, 0.1, 1e-5, true, r);
  EXPECT_STREQ(fused.computed_by, "cpu_channels_last");
  EXPECT_TRUE(fused.relu_mask_from_input && fused.residual_added);
  EXPECT_THROW(ops::batch_norm_relu_backward(go, x, w, b, Tensor(), fused, true, 1e-5, all), Error);
  ops::BatchNormResult no_residual = ops::batch_norm(x, w, b, Tensor(), Tensor(), true, 0.1, 1e-5, true);
  EXPECT_THROW(ops::batch_norm_relu_backward(go, x, w, b, r, no_residual, true, 1e-5, all), Error);
  ops::BatchNormResult hand_built = fused;  // a record whose flags disagree with its kernel
  hand_built.relu_mask_from_input = false;
  EXPECT_THROW(ops::batch_norm_relu_backward(go, x, w, b, Tensor(), hand_built, true, 1e-5, all), Error);
  auto want = ops::batch_norm_relu_backward(go, x, w, b, r, fused, true, 1e-5, all);
  // The same forward, computed by the reference: its mask is read from the output, so the
  // residual is not needed, and the residual's gradient still comes.
  ops::BatchNormResult by_ref;
  {
    KernelPreferenceGuard g(KernelPreference::Reference);
    by_ref = ops::batch_norm(x, w, b, Tensor(), Tensor(), true, 0.1, 1e-5, true, r);
  }
  EXPECT_FALSE(by_ref.relu_mask_from_input);
  auto got = ops::batch_norm_relu_backward(go, x, w, b, Tensor(), by_ref, true, 1e-5, all);
  ASSERT_TRUE(got.residual.defined());
  EXPECT_TRUE(all_close(got.residual, want.residual, 1e-4, 1e-5));
  EXPECT_TRUE(all_close(got.input, want.input, 1e-4, 1e-5));
}

}  // namespace
}  // namespace strider
