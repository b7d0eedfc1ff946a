// oneDNN batch norm, pooling and matmul against the reference path, forward and backward.
#include <gtest/gtest.h>

#include <strider/ops/conv.h>
#include <strider/ops/convert.h>
#include <strider/ops/factory.h>
#include <strider/ops/kernel_choice.h>
#include <strider/ops/linear.h>
#include <strider/ops/norm.h>
#include <strider/ops/pool.h>
#include <strider/ops/view.h>

#include "support/compare.h"
#include "support/layouts.h"

namespace strider {
namespace {

using testing::all_close;

template <class F>
auto both(F f) {
  auto fast = f();
  KernelPreferenceGuard g(KernelPreference::Reference);
  return std::make_pair(fast, f());
}

TEST(BatchNormConformance, TrainAndEvalBothLayouts) {
  for (MemoryFormat fmt : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
    for (bool training : {true, false}) {
      Tensor x = testing::sample({4, 6, 5, 7}, kFloat, 1).contiguous(fmt);
      Tensor w = testing::sample({6}, kFloat, 2), b = testing::sample({6}, kFloat, 3);
      Tensor rm0 = testing::sample({6}, kFloat, 4) * 0.1, rv0 = abs(testing::sample({6}, kFloat, 5)) + 0.5;
      Tensor rm1 = rm0.clone(), rv1 = rv0.clone();
      auto r_fast = ops::batch_norm(x, w, b, rm0, rv0, training, 0.1, 1e-5);
      ops::BatchNormResult r_ref;
      {
        KernelPreferenceGuard g(KernelPreference::Reference);
        r_ref = ops::batch_norm(x, w, b, rm1, rv1, training, 0.1, 1e-5);
      }
      EXPECT_TRUE(all_close(r_fast.out, r_ref.out, 1e-4, 1e-4)) << fmt << training;
      EXPECT_EQ(r_fast.out.strides(), x.strides());
      EXPECT_TRUE(all_close(rm0, rm1, 1e-5, 1e-6));
      EXPECT_TRUE(all_close(rv0, rv1, 1e-5, 1e-6));
      Tensor go = testing::sample(x.sizes(), kFloat, 6);
      auto [a, c] = both([&] { return ops::batch_norm_backward(go, x, w, r_fast.mean, r_fast.var, training, 1e-5, {true, true, true}); });
      EXPECT_TRUE(all_close(std::get<0>(a), std::get<0>(c), 1e-3, 1e-4)) << "dx " << fmt << training;
      EXPECT_TRUE(all_close(std::get<1>(a), std::get<1>(c), 1e-3, 1e-3)) << "dw";
      EXPECT_TRUE(all_close(std::get<2>(a), std::get<2>(c), 1e-3, 1e-3)) << "db";
    }
  }
}

// strider's channels-last training kernel cuts the rows into blocks and merges their statistics:
// many blocks, NHWC and NDHWC batches, size-1 dims, blocks of one row, few channels over many
// rows (blocks of the 1024-row cap), and data far from zero (a one-pass variance would cancel) all
// match the float64 reference, and the kernel is the one that ran.
TEST(BatchNormConformance, ChannelsLastTrainingKernelAcrossBlocksAndRanks) {
  struct Case {
    std::vector<int64_t> sizes;
    std::vector<int64_t> order;  // dims outer to inner in memory
  };
  const std::vector<Case> cases = {
      {{5, 96, 31, 29}, {0, 2, 3, 1}},           // NHWC, many blocks
      {{3, 24, 5, 6, 7}, {0, 2, 3, 4, 1}},       // NDHWC
      {{1, 16, 9, 1}, {0, 3, 2, 1}},             // size-1 dims
      {{2, 2048, 2, 3}, {0, 2, 3, 1}},           // 12 rows of 2048: blocks of one row
      {{4, 3, 64, 64}, {0, 2, 3, 1}},            // 3 channels: 16 blocks of 1024 rows
  };
  for (ScalarType dtype : {kFloat, kBFloat16})
    for (const Case& c : cases) {
      SCOPED_TRACE(detail::str(dtype, " ", IntArrayRef(c.sizes)));
      std::vector<int64_t> mem_sizes;
      for (int64_t d : c.order) mem_sizes.push_back(c.sizes[d]);
      std::vector<int64_t> back(c.order.size());
      for (size_t i = 0; i < c.order.size(); ++i) back[c.order[i]] = static_cast<int64_t>(i);
      Tensor x = (testing::sample(mem_sizes, kFloat, 21) * 0.5 + 1000.0).to(dtype).permute(back);
      Tensor go = testing::sample(mem_sizes, kFloat, 22).to(dtype).permute(back);
      const int64_t C = c.sizes[1];
      Tensor w = testing::sample({C}, kFloat, 23), b = testing::sample({C}, kFloat, 24);
      ::testing::internal::CaptureStderr();
      set_kernel_verbose(true);
      auto fast = ops::batch_norm(x, w, b, Tensor(), Tensor(), true, 0.1, 1e-5);
      auto grads = ops::batch_norm_backward(go, x, w, fast.mean, fast.var, true, 1e-5, {true, true, true});
      set_kernel_verbose(false);
      const std::string log = ::testing::internal::GetCapturedStderr();
      EXPECT_NE(log.find("batch_norm -> cpu_channels_last"), std::string::npos) << log;
      EXPECT_NE(log.find("batch_norm_backward -> cpu_channels_last"), std::string::npos) << log;
      KernelPreferenceGuard g(KernelPreference::Reference);
      auto ref = ops::batch_norm(x, w, b, Tensor(), Tensor(), true, 0.1, 1e-5);
      auto ref_grads = ops::batch_norm_backward(go, x, w, ref.mean, ref.var, true, 1e-5, {true, true, true});
      // The float32 mean of data near 1000 is off by up to half its ulp (3e-5); over a spread of
      // 0.5 that moves normalized values by about 1e-4 for PyTorch as for the kernel.
      const double tol = dtype == kBFloat16 ? 2e-2 : 1e-3;
      EXPECT_TRUE(fast.out.is_contiguous(c.sizes.size() == 5 ? MemoryFormat::ChannelsLast3d : MemoryFormat::ChannelsLast));
      EXPECT_TRUE(all_close(fast.mean, ref.mean, 1e-6, 1e-6)) << "mean";
      EXPECT_TRUE(all_close(fast.var, ref.var, 1e-4, 1e-6)) << "var";
      EXPECT_TRUE(all_close(fast.out, ref.out, tol, tol)) << "out";
      EXPECT_TRUE(all_close(std::get<0>(grads), std::get<0>(ref_grads), tol, tol)) << "dx";
      EXPECT_TRUE(all_close(std::get<1>(grads), std::get<1>(ref_grads), 1e-3, 1e-2)) << "dw";
      EXPECT_TRUE(all_close(std::get<2>(grads), std::get<2>(ref_grads), 1e-3, 1e-2)) << "db";
    }
}

TEST(PoolConformance, MaxAndAvgForwardBackward) {
  for (MemoryFormat fmt : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
    Tensor x = testing::sample({2, 5, 9, 8}, kFloat, 7).contiguous(fmt);
    for (bool is_max : {true, false}) {
      ops::PoolArgs a;
      a.kernel = {3};
      a.stride = {2};
      a.padding = {1};
      a.ceil_mode = !is_max;
      a.count_include_pad = false;
      ops::PoolResult fast = is_max ? ops::max_pool(x, 2, a) : ops::avg_pool(x, 2, a);
      ops::PoolResult ref;
      {
        KernelPreferenceGuard g(KernelPreference::Reference);
        ref = is_max ? ops::max_pool(x, 2, a, true) : ops::avg_pool(x, 2, a);
      }
      EXPECT_TRUE(all_close(fast.out, ref.out, 1e-6, 1e-6)) << is_max << fmt;
      EXPECT_EQ(fast.out.suggest_memory_format(), x.suggest_memory_format());
      Tensor go = testing::sample(fast.out.sizes(), kFloat, 8);
      Tensor gi_fast = ops::pool_backward(go, x, 2, a, fast, is_max);
      Tensor gi_ref;
      {
        KernelPreferenceGuard g(KernelPreference::Reference);
        gi_ref = ops::pool_backward(go, x, 2, a, ref, is_max);
      }
      EXPECT_TRUE(all_close(gi_fast, gi_ref, 1e-5, 1e-6)) << "backward " << is_max << fmt;
    }
  }
}

TEST(MatmulConformance, TransposedAndBatchedOperands) {
  Tensor a = testing::sample({7, 5}, kFloat, 9), b = testing::sample({5, 6}, kFloat, 10);
  auto [m1, m2] = both([&] { return ops::mm(a, b); });
  EXPECT_TRUE(all_close(m1, m2, 1e-5, 1e-5));
  auto [t1, t2] = both([&] { return ops::mm(ops::t(b), ops::t(a)); });
  EXPECT_TRUE(all_close(t1, t2, 1e-5, 1e-5));
  Tensor x = testing::sample({3, 4, 5}, kFloat, 11), w = testing::sample({6, 5}, kFloat, 12), bias = testing::sample({6}, kFloat, 13);
  auto [l1, l2] = both([&] { return ops::linear(x, w, bias); });
  EXPECT_TRUE(all_close(l1, l2, 1e-5, 1e-5));
  Tensor p = testing::sample({2, 1, 4, 5}, kFloat, 14), q = testing::sample({3, 5, 2}, kFloat, 15);
  auto [b1, b2] = both([&] { return ops::matmul(p, q); });
  EXPECT_EQ(b1.sizes(), IntArrayRef({2, 3, 4, 2}));
  EXPECT_TRUE(all_close(b1, b2, 1e-5, 1e-5));
}

// One input feature (K == 1) whose column has a stride other than 1: the channels-last NC11 input
// of a linear layer folds to [N*C, 1] with strides (1, 3). oneDNN's gemm took that stride as a
// leading dimension and failed; its primitive cache, blind to size-1 strides, then returned the
// failing primitive for the contiguous operand of the same shape too. Strided first, then
// contiguous, on shapes no other test uses (the cache lives for the process). Output strides and
// values are PyTorch 1.13's.
TEST(MatmulConformance, SizeOneDimsWithAnyStrideThenContiguous) {
  Tensor x = ones({2, 5, 1, 1}).to(MemoryFormat::ChannelsLast);
  ASSERT_EQ(x.strides(), IntArrayRef({5, 1, 5, 5}));
  Tensor y = ops::linear(x, ones({11, 1}), Tensor());
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 5, 1, 11}));
  EXPECT_EQ(y.strides(), IntArrayRef({55, 11, 11, 1}));
  EXPECT_EQ(y.sum().item<double>(), 110.0);
  EXPECT_EQ(ops::linear(ones({10, 1}), ones({11, 1}), Tensor()).sum().item<double>(), 110.0);

  Tensor col = ops::as_strided(testing::sample({13}, kFloat, 22), {13, 1}, {1, 3});
  Tensor row = ops::as_strided(testing::sample({9}, kFloat, 23), {1, 9}, {4, 1});
  Tensor wide = ops::as_strided(testing::sample({9}, kFloat, 24), {1, 9}, {1, 1});
  for (const auto& operands : {std::pair{col, row}, std::pair{ops::contiguous(col), row}, std::pair{col, wide},
                                std::pair{ops::t(row), ops::t(col)}, std::pair{ops::t(wide), ops::t(col)}}) {
    const Tensor &a = operands.first, &b = operands.second;  // named: clang 14 captures no structured binding
    auto [fast, ref] = both([&] { return ops::mm(a, b); });
    EXPECT_TRUE(all_close(fast, ref, 1e-5, 1e-5)) << a.sizes() << "@" << a.strides() << " x " << b.sizes() << "@"
                                                 << b.strides();
  }
}

// A row-major float32 right operand of 1M+ elements is reordered into the primitive's own layout
// first (the gradient-input product of a large linear layer); the result must not change, nor the
// operand.
// A bias that is a slice (stride 2) or expanded (stride 0) is read by its strides: the kernels
// took it as one dense row (linear gave [1, 10, 2, 20] for [1, 2, 3, 4]; conv read past an
// expanded bias's one element).
TEST(MatmulConformance, AStridedOrExpandedBiasIsReadByItsStrides) {
  const Tensor every_other = ops::narrow(arange(1, 9, 1, kFloat), 0, 0, 8);
  const Tensor sliced = ops::as_strided(every_other, {4}, {2}, 0);  // 1, 3, 5, 7
  const Tensor dense = ops::contiguous(sliced);
  const Tensor expanded = ops::expand(full({1}, 0.5), {4});
  for (ScalarType dtype : {kFloat, kBFloat16}) {
    const Tensor x = ops::to(ones({2, 3}), dtype), w = ops::to(ones({4, 3}), dtype);
    EXPECT_TRUE(all_close(ops::linear(x, w, ops::to(sliced, dtype)), ops::linear(x, w, ops::to(dense, dtype)), 0, 0));
    EXPECT_TRUE(all_close(ops::linear(x, w, ops::to(expanded, dtype)),
                          ops::linear(x, w, ops::to(ops::contiguous(expanded), dtype)), 0, 0));
    const Tensor img = ops::to(ones({1, 3, 5, 5}), dtype), k = ops::to(ones({4, 3, 3, 3}), dtype);
    for (const Tensor& b : {sliced, expanded})
      EXPECT_TRUE(all_close(ops::convolution(img, k, ops::to(b, dtype), {}),
                            ops::convolution(img, k, ops::to(ops::contiguous(b), dtype), {}), 0, 0));
  }
}

TEST(MatmulConformance, LargeRowMajorRightOperand) {
  Tensor a = testing::sample({520, 1024}, kFloat, 16), b = testing::sample({1024, 1030}, kFloat, 17);
  Tensor b_before = b.clone();
  auto [m1, m2] = both([&] { return ops::mm(a, b); });
  EXPECT_TRUE(all_close(m1, m2, 1e-4, 1e-4));
  EXPECT_TRUE(all_close(b, b_before, 0, 0));
  EXPECT_TRUE(b.is_contiguous());
}

// A bfloat16 product of 512+ rows takes its right operand reordered into the primitive's own
// layout first (plain, a transposed view, the linear layer's weight); results as the reference's
// within bfloat16's rounding, operands untouched.
TEST(MatmulConformance, BFloat16RightOperandReorderedForLongProducts) {
  Tensor a = testing::sample({600, 96}, kFloat, 18).to(kBFloat16), b = testing::sample({96, 72}, kFloat, 19).to(kBFloat16);
  Tensor b_before = b.clone();
  auto [m1, m2] = both([&] { return ops::mm(a, b); });
  EXPECT_EQ(m1.dtype(), kBFloat16);
  EXPECT_TRUE(all_close(m1.to(kFloat), m2.to(kFloat), 1e-2, 1e-2));
  EXPECT_TRUE(all_close(b, b_before, 0, 0));
  auto [t1, t2] = both([&] { return ops::mm(a, ops::t(ops::t(b).contiguous())); });
  EXPECT_TRUE(all_close(t1.to(kFloat), t2.to(kFloat), 1e-2, 1e-2));
  Tensor w = testing::sample({40, 96}, kFloat, 20).to(kBFloat16), bias = testing::sample({40}, kFloat, 21).to(kBFloat16);
  auto [l1, l2] = both([&] { return ops::linear(a, w, bias); });
  EXPECT_TRUE(all_close(l1.to(kFloat), l2.to(kFloat), 1e-2, 1e-2));
}

}  // namespace
}  // namespace strider
