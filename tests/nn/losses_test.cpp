// The losses beyond their PyTorch golden values (loss_golden_test.cpp): float64 finite-difference
// gradients for input and target, bfloat16 inputs against float32, each argument check as a
// named Error, and an all-padding batch leaving a model's weights finite.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <cmath>
#include <functional>
#include <string>

#include "support/compare.h"
#include "support/misuse.h"
#include "support/gradcheck.h"

namespace strider {
namespace {

namespace F = nn::functional;
using R = F::Reduction;
using V = std::vector<Tensor>;
using testing::gradcheck;
using testing::leaf;

const R kReductions[] = {R::Mean, R::Sum, R::None};

TEST(Losses, ElementwiseGradchecksForInputAndTarget) {
  for (R r : kReductions) {
    SCOPED_TRACE(static_cast<int>(r));
    Tensor x = leaf({3, 4}, 1, -2, 2), y = leaf({3, 4}, 2, -2, 2);
    EXPECT_TRUE(gradcheck([r](const V& v) { return F::mse_loss(v[0], v[1], r); }, {x, y}));
    EXPECT_TRUE(gradcheck([r](const V& v) { return F::l1_loss(v[0], v[1], r); }, {x, y}));
    EXPECT_TRUE(gradcheck([r](const V& v) { return F::smooth_l1_loss(v[0], v[1], r, 0.7); }, {x, y}));
    EXPECT_TRUE(gradcheck([r](const V& v) { return F::huber_loss(v[0], v[1], r, 0.7); }, {x, y}));
    Tensor lp = leaf({3, 4}, 3, -3, -0.1), p = leaf({3, 4}, 4, 0.05, 1);
    EXPECT_TRUE(gradcheck([r](const V& v) { return F::kl_div(v[0], v[1], r); }, {lp, p}));
    EXPECT_TRUE(gradcheck([r](const V& v) { return F::kl_div(v[0], v[1], r, true); }, {lp, leaf({3, 4}, 5, -3, 0)}));
    Tensor prob = leaf({3, 4}, 6, 0.05, 0.95), t = leaf({3, 4}, 7, 0, 1);
    Tensor w = leaf({4}, 8, 0.5, 2).detach();
    EXPECT_TRUE(gradcheck([r, w](const V& v) { return F::binary_cross_entropy(v[0], v[1], w, r); }, {prob, t}));
    Tensor logits = leaf({2, 3, 2, 2}, 9, -4, 4, MemoryFormat::ChannelsLast), lt = leaf({2, 3, 2, 2}, 10, 0, 1);
    Tensor pw = leaf({2, 1}, 11, 0.5, 3).detach();
    EXPECT_TRUE(gradcheck(
        [r, pw](const V& v) { return F::binary_cross_entropy_with_logits(v[0], v[1], pw.reshape({1, 2}), r, pw); },
        {logits, lt}));
  }
  EXPECT_TRUE(gradcheck([](const V& v) { return F::kl_div(v[0], v[1], R::BatchMean); },
                        {leaf({3, 4}, 12, -3, -0.1), leaf({3, 4}, 13, 0.05, 1)}));
}

TEST(Losses, ClassGradchecks) {
  Tensor x = leaf({4, 5}, 20, -2, 2);
  Tensor target = tensor(std::vector<int64_t>{1, -100, 4, 2});
  Tensor w = leaf({5}, 21, 0.2, 2).detach();
  for (R r : kReductions) {
    SCOPED_TRACE(static_cast<int>(r));
    for (double ls : {0.0, 0.3}) {
      const F::CrossEntropyOptions o{.weight = w, .reduction = r, .label_smoothing = ls};
      EXPECT_TRUE(gradcheck([&](const V& v) { return F::cross_entropy(v[0], target, o); }, {x}));
      EXPECT_TRUE(gradcheck([&](const V& v) { return F::cross_entropy(v[0], v[1], o); }, {x, leaf({4, 5}, 22, 0, 1)}));
    }
    EXPECT_TRUE(gradcheck([&](const V& v) { return F::nll_loss(v[0], target, {.weight = w, .reduction = r}); }, {x}));
    Tensor spatial = leaf({2, 5, 3}, 23, -2, 2);
    Tensor st = tensor(std::vector<int64_t>{0, 4, -100, 3, 3, 1}).reshape({2, 3});
    EXPECT_TRUE(gradcheck([&](const V& v) {
      return F::cross_entropy(v[0], st, {.weight = w, .reduction = r, .label_smoothing = 0.2});
    }, {spatial}));
    EXPECT_TRUE(gradcheck([&](const V& v) { return F::cross_entropy(v[0], tensor(std::vector<int64_t>{3}).reshape({}), r, 0.1); },
                          {leaf({5}, 24, -2, 2)}));
  }
}

// 16-bit inputs compute each element in float32 and round once per op: the loss and gradients
// are float32's to bfloat16's precision, in bfloat16.
TEST(Losses, BFloat16InputsMatchFloat32) {
  using Fn = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<const char*, Fn>> losses = {
      {"mse", [](const Tensor& a, const Tensor& b) { return F::mse_loss(a, b); }},
      {"l1", [](const Tensor& a, const Tensor& b) { return F::l1_loss(a, b); }},
      {"smooth_l1", [](const Tensor& a, const Tensor& b) { return F::smooth_l1_loss(a, b, R::Sum, 0.5); }},
      {"huber", [](const Tensor& a, const Tensor& b) { return F::huber_loss(a, b, R::Sum, 0.5); }},
      {"kl_div", [](const Tensor& a, const Tensor& b) { return F::kl_div(-abs(a), abs(b), R::BatchMean); }},
      {"bce", [](const Tensor& a, const Tensor& b) { return F::binary_cross_entropy(sigmoid(a), sigmoid(b)); }},
      {"bce_logits", [](const Tensor& a, const Tensor& b) {
         return F::binary_cross_entropy_with_logits(a, sigmoid(b), {}, R::Mean, full({5}, 2.0, a.dtype()));
       }},
      {"cross_entropy_probs", [](const Tensor& a, const Tensor& b) {
         return F::cross_entropy(a, softmax(b, 1), R::Mean, 0.1);
       }},
      {"cross_entropy", [](const Tensor& a, const Tensor&) {
         return F::cross_entropy(a, tensor(std::vector<int64_t>{0, 4, -100, 2}),
                                 {.weight = full({5}, 0.5, a.dtype()), .label_smoothing = 0.1});
       }},
  };
  Generator gen(7);
  const Tensor a = randn({4, 5}, kFloat, &gen).to(kBFloat16).to(kFloat), b = randn({4, 5}, kFloat, &gen);
  for (const auto& [name, fn] : losses) {
    SCOPED_TRACE(name);
    Tensor x16 = a.to(kBFloat16).requires_grad_(), x32 = a.clone().requires_grad_();
    Tensor l16 = fn(x16, b.to(kBFloat16)), l32 = fn(x32, b.to(kBFloat16).to(kFloat));
    EXPECT_EQ(l16.dtype(), kBFloat16);
    EXPECT_TRUE(testing::all_close(l16, l32, 2e-2, 1e-3));
    l16.backward();
    l32.backward();
    EXPECT_EQ(x16.grad().dtype(), kBFloat16);
    EXPECT_TRUE(testing::all_close(x16.grad(), x32.grad(), 3e-2, 2e-3));
  }
}

using testing::expect_errors;
using testing::Misuse;

TEST(Losses, ArgumentChecksAreNamedErrors) {
  const Tensor x = full({2, 3}, 0.5), t = full({2, 3}, 0.5), idx = tensor(std::vector<int64_t>{0, 2});
  expect_errors({
      {"shape", [&] { F::l1_loss(x, ones({3})); },
       "[l1_loss] input [2, 3] and target [3] must have the same shape (PyTorch would broadcast them"},
      {"integer input", [&] { F::huber_loss(ones({2}, kLong), ones({2}, kLong)); },
       "[huber_loss] expected a floating-point input, got int64"},
      {"batchmean", [&] { F::smooth_l1_loss(x, t, R::BatchMean); },
       "[smooth_l1_loss] reduction BatchMean is only for kl_div"},
      {"bad enum", [&] { F::mse_loss(x, t, static_cast<R>(7)); }, "[mse_loss] invalid reduction"},
      {"negative beta", [&] { F::smooth_l1_loss(x, t, R::Mean, -1); }, "[smooth_l1_loss] beta must be >= 0"},
      {"zero delta", [&] { F::huber_loss(x, t, R::Mean, 0); }, "[huber_loss] delta must be > 0"},
      {"kl_div shape", [&] { F::kl_div(x, ones({2, 1})); }, "[kl_div] input [2, 3] and target [2, 1]"},
      {"bce input > 1", [&] { F::binary_cross_entropy(full({2, 3}, 1.5), t); },
       "[binary_cross_entropy] all elements of input should be between 0 and 1, got 1.5 at flat index 0"},
      {"bce NaN input", [&] { F::binary_cross_entropy(full({2}, std::nan("")), full({2}, 0.5)); },
       "all elements of input should be between 0 and 1, got nan"},
      {"bce 0/255 target", [&] { F::binary_cross_entropy(x, full({2, 3}, 255.0)); },
       "all elements of target should be between 0 and 1, got 255 at flat index 0 (scale a 0/255 mask"},
      {"bce_logits negative target", [&] { F::binary_cross_entropy_with_logits(x, full({2, 3}, -1.0)); },
       "[binary_cross_entropy_with_logits] all elements of target should be between 0 and 1, got -1"},
      {"bce dtype", [&] { F::binary_cross_entropy(x, t.to(kDouble)); },
       "[binary_cross_entropy] target must have the input's dtype float32, got float64"},
      {"bce weight shape", [&] { F::binary_cross_entropy(x, t, ones({2})); },
       "[binary_cross_entropy] weight [2] does not broadcast to the input's shape [2, 3]"},
      {"bce negative weight", [&] { F::binary_cross_entropy(x, t, full({3}, -1.0)); },
       "[binary_cross_entropy] weight [3] must be >= 0 everywhere, got -1"},
      {"pos_weight dtype", [&] { F::binary_cross_entropy_with_logits(x, t, {}, R::Mean, ones({3}, kDouble)); },
       "[binary_cross_entropy_with_logits] pos_weight must have the input's dtype float32, got float64"},
      {"weight requiring grad", [&] { F::binary_cross_entropy(x, t, ones({3}).requires_grad_()); },
       "weight requires grad, but the loss is not differentiable with respect to it"},
      {"class weight size", [&] { F::cross_entropy(x, idx, {.weight = ones({2})}); },
       "[cross_entropy] weight tensor should be defined either for all 3 classes or no classes but got weight "
       "tensor of shape: [2]"},
      {"class weight negative", [&] { F::nll_loss(x, idx, {.weight = tensor(std::vector<double>{1, -2, 1})}); },
       "[nll_loss] weight [3] must be >= 0 everywhere, got -2"},
      {"class weight dtype", [&] { F::cross_entropy(x, idx, {.weight = ones({3}, kDouble)}); },
       "[cross_entropy] weight must have the input's dtype float32, got float64; convert it with .to(float32)"},
      {"label_smoothing", [&] { F::cross_entropy(x, idx, R::Mean, 1.5); },
       "[cross_entropy] label_smoothing must be between 0.0 and 1.0, got 1.5"},
      {"probabilities with ignore_index", [&] { F::cross_entropy(x, t, {.ignore_index = 1}); },
       "[cross_entropy] ignore_index is not supported for class-probability targets"},
      {"int64 target of the input's shape", [&] { F::cross_entropy(x, zeros({2, 3}, kLong)); },
       "[cross_entropy] expected a floating-point target for class probabilities"},
      {"unbatched, batched target", [&] { F::cross_entropy(ones({3}), idx); },
       "[cross_entropy] an unbatched input [3] needs a 0-d class index or class probabilities of its shape"},
      {"nll unbatched", [&] { F::nll_loss(ones({3}), idx); }, "[nll_loss] an unbatched input [3] needs a 0-d target"},
      {"cross_entropy batchmean", [&] { F::cross_entropy(x, idx, R::BatchMean); }, "[cross_entropy] reduction BatchMean"},
      {"out of range with weight", [&] { F::cross_entropy(x, tensor(std::vector<int64_t>{0, 3}), {.weight = ones({3})}); },
       "[cross_entropy] target 3 is out of bounds for 3 classes (item 1; ignore_index is -100)"},
  });
}

// The audit's case: one batch of padding only, label smoothing, an optimizer step. PyTorch's loss
// is NaN and its gradients 0, so the step leaves the weights finite.
TEST(Losses, AllPaddingBatchLeavesWeightsFinite) {
  Tensor w = ones({4}).requires_grad_();
  for (R r : kReductions) {
    Tensor logits = ones({3, 4}) * w;
    Tensor loss = F::cross_entropy(logits, tensor(std::vector<int64_t>{-100, -100, -100}), {.weight = full({4}, 0.5), .reduction = r,
                                                                       .label_smoothing = 0.1});
    if (r == R::None) loss = loss.sum();
    loss.backward();
  }
  EXPECT_EQ(testing::values(w.grad()), (std::vector<double>{0, 0, 0, 0}));
  optim::AdamW opt(optim::NamedParameters{{"w", w}}, {.lr = 0.1});
  opt.step();
  for (double v : testing::values(w)) EXPECT_TRUE(std::isfinite(v));
}

}  // namespace
}  // namespace strider
