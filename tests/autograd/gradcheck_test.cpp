// Float64 finite-difference checks of every differentiable op, in contiguous and channels-last
// layouts and with broadcasting.
#include <gtest/gtest.h>

#include "strider/core/pointwise_table.h"
#include "strider/core/reduce_table.h"
#include "support/compare.h"
#include "support/gradcheck.h"
#include "support/layouts.h"

namespace strider {
namespace {

using testing::gradcheck;
using testing::leaf;
using V = std::vector<Tensor>;
constexpr auto CL = MemoryFormat::ChannelsLast;

TEST(Gradcheck, BinaryOpsWithBroadcasting) {
  for (MemoryFormat f : {MemoryFormat::Contiguous, CL}) {
    Tensor a = leaf({2, 3, 2, 2}, 1, -1, 1, f), b = leaf({1, 3, 1, 1}, 2, 0.5, 1.5);
    EXPECT_TRUE(gradcheck([](const V& x) { return add(x[0], x[1], 2.5); }, {a, b}));
    EXPECT_TRUE(gradcheck([](const V& x) { return sub(x[0], x[1], 0.5); }, {a, b}));
    EXPECT_TRUE(gradcheck([](const V& x) { return mul(x[0], x[1]); }, {a, b}));
    EXPECT_TRUE(gradcheck([](const V& x) { return div(x[0], x[1]); }, {a, b}));
    EXPECT_TRUE(gradcheck([](const V& x) { return pow(abs(x[0]) + 0.5, x[1]); }, {a, b}));
    EXPECT_TRUE(gradcheck([](const V& x) { return maximum(x[0], x[1] - 1.0); }, {a, b}));
    EXPECT_TRUE(gradcheck([](const V& x) { return minimum(x[0], x[1] - 1.0); }, {a, b}));
    EXPECT_TRUE(gradcheck([](const V& x) { return addcmul(x[0], x[1], x[0], 0.7); }, {a, b}));
    EXPECT_TRUE(gradcheck([](const V& x) { return where(gt(x[0], 0), x[0], x[1]); }, {a, b}));
  }
}

TEST(Gradcheck, EveryArithmeticRow) {
  // Every arithmetic row of the binary op table (their gradients are written by hand), on
  // positive operands with broadcasting, with a Scalar and with alpha where the signature has them.
  int rows = 0;
  for (MemoryFormat f : {MemoryFormat::Contiguous, CL}) {
    Tensor a = leaf({2, 3, 2, 2}, 9, 0.5, 1.5, f), b = leaf({1, 3, 1, 1}, 10, 0.5, 1.5);
#define STRIDER_ROW(Enum, function, signature, kind, ...) STRIDER_GRADIENT_##kind(function, signature)
#define STRIDER_GRADIENT_Compare(function, signature)
#define STRIDER_GRADIENT_Logical(function, signature)
#define STRIDER_GRADIENT_Arith(function, signature) STRIDER_SIGNATURE_##signature(function)
#define STRIDER_SIGNATURE_None(function)
#define STRIDER_SIGNATURE_Tensors(function) \
  ++rows;                                   \
  EXPECT_TRUE(gradcheck([](const V& x) { return function(x[0], x[1]); }, {a, b})) << #function;
#define STRIDER_SIGNATURE_TensorOrScalar(function) \
  STRIDER_SIGNATURE_Tensors(function)              \
  EXPECT_TRUE(gradcheck([](const V& x) { return function(x[0], Scalar(1.25)); }, {a})) << #function;
#define STRIDER_SIGNATURE_Alpha(function)   \
  STRIDER_SIGNATURE_TensorOrScalar(function) \
  EXPECT_TRUE(gradcheck([](const V& x) { return function(x[0], x[1], 2.5); }, {a, b})) << #function;
    STRIDER_BINARY_OPS(STRIDER_ROW)
#undef STRIDER_ROW
  }
  EXPECT_GE(rows, 2 * 7);
}

TEST(Gradcheck, ScalarOperands) {
  Tensor a = leaf({3, 4}, 3, 0.5, 2);
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0] + 2.0; }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0] - 2.0; }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return 3.0 - x[0]; }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0] * 1.5; }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0] / 1.5; }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return 2.0 / x[0]; }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return pow(x[0], 2.5); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return where(gt(x[0], 1.0), x[0], 0.0); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return masked_fill(x[0], gt(x[0], 1.0), 0.0); }, {a}));
}

TEST(Gradcheck, UnaryOps) {
  Tensor a = leaf({2, 3, 3, 2}, 4, -2, 2, CL);
  Tensor p = leaf({2, 3, 3, 2}, 5, 0.2, 2, CL);
  // Every plain row of the op table, sampled in its domain.
  int rows = 0;
#define STRIDER_ROW(Enum, function, signature, kind, rule, domain, ...) STRIDER_CHECK_##kind(function, domain)
#define STRIDER_CHECK_Plain(function, domain)                                                             \
  ++rows;                                                                                                 \
  EXPECT_TRUE(gradcheck([](const V& x) { return function(x[0]); }, {std::string(#domain) == "Any" ? a : p})) \
      << #function;
#define STRIDER_CHECK_NoGrad(function, domain)
#define STRIDER_CHECK_Custom(function, domain)
  STRIDER_UNARY_OPS(STRIDER_ROW)
#undef STRIDER_ROW
  EXPECT_GE(rows, 12);
  // The custom rows, whose functions take arguments.
  EXPECT_TRUE(gradcheck([](const V& x) { return gelu(x[0]); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return gelu(x[0], "tanh"); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return pow(x[0], 1.7); }, {p}));
  EXPECT_TRUE(gradcheck([](const V& x) { return clamp(x[0], -0.5, 0.8); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return clamp(x[0], std::nullopt, 0.3); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return leaky_relu(x[0], 0.2); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return elu(x[0], 0.7); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return softplus(x[0], 2.0, 1.5); }, {a}));  // both sides of the threshold
  EXPECT_TRUE(gradcheck([](const V& x) { return hardtanh(x[0], -0.5, 0.8); }, {a}));
  Tensor wide = leaf({2, 3, 3, 2}, 9, -5, 5, CL);  // across hardswish's and hardsigmoid's kinks at +-3
  EXPECT_TRUE(gradcheck([](const V& x) { return hardswish(x[0]); }, {wide}));
  EXPECT_TRUE(gradcheck([](const V& x) { return hardsigmoid(x[0]); }, {wide}));
}

TEST(Gradcheck, Reductions) {
  Tensor a = leaf({3, 4, 2, 2}, 6, -1, 1, CL);
  EXPECT_TRUE(gradcheck([](const V& x) { return sum(x[0]); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return sum(x[0], {1, 3}); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return sum(x[0], {2}, true); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return mean(x[0], {0, 2, 3}); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return mean(x[0]); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return var(x[0], {1}); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return var(x[0], {}, 0, true); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return amax(x[0], {1}); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return amin(x[0], {2, 3}, true); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return max(x[0]); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return min(x[0]); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return max(x[0], 1).first; }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return min(x[0], -1, true).first; }, {a}));
  Tensor small = leaf({3, 4}, 7, 0.5, 1.5);
  EXPECT_TRUE(gradcheck([](const V& x) { return prod(x[0], {1}); }, {small}));
  EXPECT_TRUE(gradcheck([](const V& x) { return prod(x[0]); }, {small}));
}

// A reduction row called over `dims` with `keep`, by its signature (the others' defaults).
#define STRIDER_CALL_Dims(f, t, dims, keep) f(t, dims, keep)
#define STRIDER_CALL_DimsDtype(f, t, dims, keep) f(t, dims, keep)
#define STRIDER_CALL_Correction(f, t, dims, keep) f(t, dims, 1, keep)

TEST(Gradcheck, EveryReductionRow) {
  // Every row of the reduction table with a gradient: over everything, and over some dims kept
  // and squeezed, channels-last. Values in [0.5, 1.5) keep prod away from zero.
  static const DimVector kSome = {1, 3}, kOne = {2};
  Tensor a = leaf({3, 4, 2, 2}, 8, 0.5, 1.5, CL);
  int rows = 0;
#define STRIDER_ROW(Enum, function, name, signature, rule, empty, accumulate, result, saves, ...) \
  STRIDER_REDUCTION_CHECK_##saves(function, signature)
#define STRIDER_REDUCTION_CHECK_NoGrad(function, signature)
#define STRIDER_REDUCTION_CHECK_Shapes(function, signature)                                                             \
  ++rows;                                                                                                     \
  EXPECT_TRUE(gradcheck([](const V& x) { return function(x[0]); }, {a})) << #function;                        \
  EXPECT_TRUE(gradcheck([](const V& x) { return STRIDER_CALL_##signature(function, x[0], kSome, true); }, {a})) \
      << #function;                                                                                           \
  EXPECT_TRUE(gradcheck([](const V& x) { return STRIDER_CALL_##signature(function, x[0], kOne, false); }, {a})) \
      << #function;
#define STRIDER_REDUCTION_CHECK_Input(function, signature) STRIDER_REDUCTION_CHECK_Shapes(function, signature)
#define STRIDER_REDUCTION_CHECK_InputOutput(function, signature) STRIDER_REDUCTION_CHECK_Shapes(function, signature)
  STRIDER_REDUCE_OPS(STRIDER_ROW)
#undef STRIDER_ROW
  EXPECT_GE(rows, 6);
}

TEST(Gradcheck, ProdWithZeros) {
  Tensor a = tensor(std::vector<double>{0, 2, 3, 0, 0, 4, 1, 2, 5}, kDouble).reshape({3, 3}).requires_grad_();
  EXPECT_TRUE(gradcheck([](const V& x) { return prod(x[0], {1}); }, {a}));
}

TEST(Gradcheck, Softmax) {
  Tensor a = leaf({2, 3, 4}, 8, -2, 2);
  for (int64_t d = -3; d < 3; ++d) {
    EXPECT_TRUE(gradcheck([d](const V& x) { return softmax(x[0], d); }, {a}));
    EXPECT_TRUE(gradcheck([d](const V& x) { return log_softmax(x[0], d); }, {a}));
  }
}

TEST(Gradcheck, ViewsAndConversions) {
  Tensor a = leaf({2, 3, 4}, 9);
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].view({6, 4}); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].transpose(0, 2).reshape({-1}); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].permute({2, 0, 1}); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].narrow(2, 1, 2); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].slice(1, 0, std::nullopt, 2); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].select(1, 2); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].unsqueeze(1).expand({2, 5, 3, 4}); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].unsqueeze(0).squeeze(); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].flatten(1); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].as_strided({3, 3}, {2, 1}, 1); }, {a}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].t().contiguous(); }, {leaf({3, 5}, 10)}));
  Tensor img = leaf({2, 3, 2, 2}, 11);
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].to(CL) * 2.0; }, {img}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].contiguous(CL).clone(); }, {img}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].to(kFloat).to(kDouble); }, {img}, 1e-3, 1e-4, 1e-3));
}

TEST(Gradcheck, CatAndStack) {
  Tensor a = leaf({2, 3, 2, 2}, 12, -1, 1, CL), b = leaf({2, 1, 2, 2}, 13), c = leaf({2, 3, 2, 2}, 14);
  EXPECT_TRUE(gradcheck([](const V& x) { return cat({x[0], x[1]}, 1); }, {a, b}));
  EXPECT_TRUE(gradcheck([](const V& x) { return stack({x[0], x[1]}, 2); }, {a, c}));
  EXPECT_TRUE(gradcheck([](const V& x) { return stack({x[0], x[1]}, 4); }, {a, c}));
}

}  // namespace
}  // namespace strider

namespace strider {
namespace {

using testing::gradcheck;
using testing::leaf;
using V = std::vector<Tensor>;

TEST(GradcheckConv, Conv2dAllArguments) {
  for (MemoryFormat f : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
    Tensor x = leaf({2, 4, 5, 5}, 21, -1, 1, f), w = leaf({6, 2, 3, 3}, 22), b = leaf({6}, 23);
    EXPECT_TRUE(gradcheck([](const V& v) { return conv2d(v[0], v[1], v[2], {2}, {1}, {1}, 2); }, {x, w, b}));
    EXPECT_TRUE(gradcheck([](const V& v) { return conv2d(v[0], v[1], Tensor(), {1}, {2}, {2}, 2); }, {x, w}));
  }
}

TEST(GradcheckConv, TransposedAnd1d3d) {
  Tensor x = leaf({1, 4, 3, 3}, 24), w = leaf({4, 3, 3, 3}, 25), b = leaf({3}, 26);
  EXPECT_TRUE(gradcheck([](const V& v) { return conv_transpose2d(v[0], v[1], v[2], {2}, {1}, {1}); }, {x, w, b}));
  Tensor x1 = leaf({2, 3, 7}, 27), w1 = leaf({4, 3, 3}, 28);
  EXPECT_TRUE(gradcheck([](const V& v) { return conv1d(v[0], v[1], Tensor(), {2}, {1}); }, {x1, w1}));
  Tensor x3 = leaf({1, 2, 3, 4, 4}, 29, -1, 1, MemoryFormat::ChannelsLast3d), w3 = leaf({3, 2, 2, 2, 2}, 30);
  EXPECT_TRUE(gradcheck([](const V& v) { return conv3d(v[0], v[1], Tensor(), {1}, {1}); }, {x3, w3}));
}

}  // namespace
}  // namespace strider

namespace strider {
namespace {

using testing::gradcheck;
using testing::leaf;
using V = std::vector<Tensor>;

TEST(GradcheckNN, BatchNormTrainingAndEval) {
  for (MemoryFormat f : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
    Tensor x = leaf({3, 2, 3, 2}, 31, -1, 1, f), w = leaf({2}, 32, 0.5, 1.5), b = leaf({2}, 33);
    Tensor rm = zeros({2}, kDouble), rv = ones({2}, kDouble);
    EXPECT_TRUE(gradcheck([&](const V& v) { return batch_norm(v[0], Tensor(), Tensor(), v[1], v[2], true); }, {x, w, b}));
    EXPECT_TRUE(gradcheck([&](const V& v) { return batch_norm(v[0], rm, rv, v[1], v[2], false); }, {x, w, b}));
    EXPECT_TRUE(gradcheck([&](const V& v) { return batch_norm_relu(v[0], Tensor(), Tensor(), v[1], v[2], true); }, {x, w, b}));
    EXPECT_TRUE(gradcheck([&](const V& v) { return batch_norm_relu(v[0], rm, rv, v[1], v[2], false); }, {x, w, b}));
    Tensor r = leaf({3, 2, 3, 2}, 34, -1, 1, f);
    EXPECT_TRUE(gradcheck([&](const V& v) { return batch_norm_add_relu(v[0], v[3], Tensor(), Tensor(), v[1], v[2], true); },
                          {x, w, b, r}));
    EXPECT_TRUE(gradcheck([&](const V& v) { return batch_norm_add_relu(v[0], v[3], rm, rv, v[1], v[2], false); },
                          {x, w, b, r}));
  }
}

// PyTorch takes a weight without a bias and a bias without a weight (the missing one acts as 1
// or 0); strider refused both. float64 through the gradcheck, float32 (oneDNN's kernels) against
// the call with the identity given explicitly.
TEST(GradcheckNN, BatchNormWithOnlyWeightOrOnlyBias) {
  for (MemoryFormat f : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
    Tensor x = leaf({3, 2, 3, 2}, 35, -1, 1, f), w = leaf({2}, 36, 0.5, 1.5), b = leaf({2}, 37);
    Tensor rm = zeros({2}, kDouble), rv = ones({2}, kDouble);
    for (bool training : {true, false}) {
      EXPECT_TRUE(gradcheck([&](const V& v) { return batch_norm(v[0], rm, rv, v[1], Tensor(), training); }, {x, w}));
      EXPECT_TRUE(gradcheck([&](const V& v) { return batch_norm(v[0], rm, rv, Tensor(), v[1], training); }, {x, b}));
      EXPECT_TRUE(gradcheck([&](const V& v) { return batch_norm_relu(v[0], rm, rv, v[1], Tensor(), training); }, {x, w}));
      EXPECT_TRUE(gradcheck([&](const V& v) { return batch_norm_relu(v[0], rm, rv, Tensor(), v[1], training); }, {x, b}));
    }
    Tensor xf = testing::sample({4, 3, 5, 6}, kFloat, 38).to(f);
    Tensor wf = testing::sample({3}, kFloat, 39), bf = testing::sample({3}, kFloat, 40);
    for (bool weight_only : {true, false}) {
      Tensor p = (weight_only ? wf : bf).detach();
      p.requires_grad_();
      Tensor q = p.detach();
      q.requires_grad_();
      Tensor got = weight_only ? batch_norm(xf, Tensor(), Tensor(), p, Tensor(), true)
                               : batch_norm(xf, Tensor(), Tensor(), Tensor(), p, true);
      Tensor want = weight_only ? batch_norm(xf, Tensor(), Tensor(), q, zeros({3}), true)
                                : batch_norm(xf, Tensor(), Tensor(), ones({3}), q, true);
      EXPECT_TRUE(testing::all_close(got, want, 1e-6, 1e-6)) << weight_only;
      Tensor go = testing::sample(got.sizes(), kFloat, 41);
      sum(mul(got, go)).backward();
      sum(mul(want, go)).backward();
      EXPECT_TRUE(testing::all_close(p.grad(), q.grad(), 1e-5, 1e-5)) << weight_only;
    }
  }
}

TEST(GradcheckNN, Pooling) {
  Tensor x = leaf({2, 2, 5, 6}, 34, -1, 1, MemoryFormat::ChannelsLast);
  EXPECT_TRUE(gradcheck([](const V& v) { return avg_pool2d(v[0], {3}, {2}, {1}, true, false); }, {x}));
  EXPECT_TRUE(gradcheck([](const V& v) { return avg_pool2d(v[0], {2, 3}); }, {x}));
  EXPECT_TRUE(gradcheck([](const V& v) { return max_pool2d(v[0], {3}, {2}, {1}); }, {x}));
  EXPECT_TRUE(gradcheck([](const V& v) { return adaptive_avg_pool2d(v[0], {2, 4}); }, {x}));
  EXPECT_TRUE(gradcheck([](const V& v) { return adaptive_avg_pool2d(v[0], {1, 1}); }, {x}));
  EXPECT_TRUE(gradcheck([](const V& v) { return adaptive_max_pool2d(v[0], {2, 2}); }, {x}));
  Tensor x3 = leaf({1, 2, 4, 4, 4}, 35);
  EXPECT_TRUE(gradcheck([](const V& v) { return max_pool3d(v[0], {2}); }, {x3}));
  EXPECT_TRUE(gradcheck([](const V& v) { return avg_pool3d(v[0], {2}, {1}); }, {x3}));
}

TEST(GradcheckNN, LinearAndMatmul) {
  Tensor x = leaf({2, 3, 4}, 36), w = leaf({5, 4}, 37), b = leaf({5}, 38);
  EXPECT_TRUE(gradcheck([](const V& v) { return linear(v[0], v[1], v[2]); }, {x, w, b}));
  Tensor p = leaf({2, 1, 3, 4}, 39), q = leaf({3, 4, 2}, 40);
  EXPECT_TRUE(gradcheck([](const V& v) { return matmul(v[0], v[1]); }, {p, q}));
  Tensor vec = leaf({4}, 41), m = leaf({3, 4}, 42);
  EXPECT_TRUE(gradcheck([](const V& v) { return matmul(v[1], v[0]); }, {vec, m}));
  EXPECT_TRUE(gradcheck([](const V& v) { return matmul(v[0], v[1].t()); }, {vec, m}));
  EXPECT_TRUE(gradcheck([](const V& v) { return bmm(v[0], v[1]); }, {leaf({2, 3, 4}, 43), leaf({2, 4, 2}, 44)}));
}

}  // namespace
}  // namespace strider
