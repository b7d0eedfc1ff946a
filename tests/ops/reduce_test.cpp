// Reduction and softmax values, dtypes and errors.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <cmath>

#include "support/compare.h"

namespace strider {
namespace {

using testing::values;

TEST(Reduce, SumMeanOverDims) {
  Tensor x = arange(24).reshape({2, 3, 4}).to(kFloat);
  EXPECT_EQ(sum(x).item<double>(), 276.0);
  EXPECT_EQ(sum(x, {0, 2}).sizes(), IntArrayRef({3}));
  EXPECT_EQ(values(sum(x, {0, 2})), (std::vector<double>{60, 92, 124}));
  EXPECT_EQ(mean(x, {-1}, true).sizes(), IntArrayRef({2, 3, 1}));
  EXPECT_EQ(values(mean(x, {-1})), (std::vector<double>{1.5, 5.5, 9.5, 13.5, 17.5, 21.5}));
  EXPECT_EQ(sum(arange(5)).dtype(), kLong);
  EXPECT_EQ(sum(tensor(std::vector<double>{1, 0, 1}, kBool)).item<int64_t>(), 2);
  EXPECT_EQ(sum(empty({0, 3}), {0}).sizes(), IntArrayRef({3}));
  EXPECT_EQ(values(sum(empty({0, 3}), {0})), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(sum(x, {1}, false, kDouble).dtype(), kDouble);
}

TEST(Reduce, LargeFloatSumsDoNotDrift) {
  Tensor x = full({1 << 24}, 0.1);
  EXPECT_NEAR(sum(x).item<double>(), 0.1f * double(1 << 24), 1.0);
}

TEST(Reduce, MaxArgmaxTiesAndNaN) {
  Tensor x = tensor(std::vector<double>{1, 5, 5, 2, -1, 0});
  EXPECT_EQ(argmax(x).item<int64_t>(), 1);
  auto [v, i] = max(x.reshape({2, 3}), 1);
  EXPECT_EQ(values(v), (std::vector<double>{5, 2}));
  EXPECT_EQ(values(i), (std::vector<double>{1, 0}));
  EXPECT_EQ(argmin(x).item<int64_t>(), 4);
  Tensor n = tensor(std::vector<double>{1, NAN, 3});
  EXPECT_TRUE(std::isnan(amax(n).item<double>()));
  EXPECT_EQ(argmax(n).item<int64_t>(), 1);
  EXPECT_THROW(amax(empty({0})), Error);
  EXPECT_THROW(argmax(empty({2, 0}), 1), Error);
}

TEST(Reduce, VarianceUsesCorrection) {
  Tensor x = tensor(std::vector<double>{1, 2, 3, 4}, kDouble);
  EXPECT_DOUBLE_EQ(var(x).item<double>(), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(var(x, {}, 0).item<double>(), 1.25);
  // PyTorch 1.13 divides by max(0, n - correction): inf, or NaN where the deviations are 0.
  EXPECT_TRUE(std::isinf(var(tensor(std::vector<double>{1, 2}), {}, 2).item<double>()));
  EXPECT_TRUE(std::isinf(var(tensor(std::vector<double>{1, 2}).reshape({1, 2}), {1}, 3).item<double>()));
  EXPECT_TRUE(std::isnan(var(tensor(std::vector<double>{1, 1}), {}, 2).item<double>()));
  EXPECT_THROW(var(arange(4)), Error);
  EXPECT_THROW(mean(arange(4)), Error);
  EXPECT_THROW(sum(x, {1}), Error);
  EXPECT_THROW(sum(x.reshape({2, 2}), {0, 0}), Error);
}

TEST(Softmax, RowsSumToOneAndLogMatches) {
  Tensor x = rand({3, 7, 5}) * 10;
  for (int64_t d = 0; d < 3; ++d) {
    Tensor s = softmax(x, d);
    EXPECT_TRUE(testing::all_close(sum(s, {d}), ones(sum(s, {d}).sizes()), 1e-6, 1e-6));
    EXPECT_TRUE(testing::all_close(log_softmax(x, d), log(s), 1e-5, 1e-5));
  }
  Tensor big = tensor(std::vector<double>{1000, 1000});
  EXPECT_EQ(values(softmax(big, 0)), (std::vector<double>{0.5, 0.5}));
  Tensor inf = tensor(std::vector<double>{-INFINITY, 0});
  EXPECT_EQ(values(softmax(inf, 0)), (std::vector<double>{0, 1}));
  EXPECT_THROW(softmax(arange(3), 0), Error);
  EXPECT_THROW(softmax(x, 3), Error);
}

// A zero-size dim other than the reduced one leaves no outputs: the fast kernels divided by the
// kept and inner extents (SIGFPE). Strides are PyTorch 1.13's.
TEST(Reduce, EmptyKeptDimGivesEmptyResultWithEveryKernel) {
  for (KernelPreference pref : {KernelPreference::Fastest, KernelPreference::Reference}) {
    KernelPreferenceGuard guard(pref);
    Tensor x = empty({3, 0});
    for (const Tensor& r : {sum(x, {0}), mean(x, {0}), var(x, {0}), amax(x, {0}), prod(x, {0}), argmax(x, 0),
                            max(x, 0).first}) {
      EXPECT_EQ(r.sizes(), IntArrayRef({0}));
      EXPECT_EQ(r.strides(), IntArrayRef({1}));
    }
    Tensor cl = empty({2, 3, 0, 5}).to(MemoryFormat::ChannelsLast);
    EXPECT_EQ(sum(cl, {1}, true).strides(), IntArrayRef({5, 5, 5, 1}));
  }
}

// softmax(x, d) with an empty dim after d: an empty result, not a division by the inner size.
// Forward and gradient strides are PyTorch 1.13's.
TEST(Softmax, EmptyDimAfterTheSoftmaxDimWithEveryKernel) {
  for (KernelPreference pref : {KernelPreference::Fastest, KernelPreference::Reference}) {
    KernelPreferenceGuard guard(pref);
    for (bool log : {false, true}) {
      auto f = [log](const Tensor& t, int64_t d) { return log ? log_softmax(t, d) : softmax(t, d); };
      EXPECT_EQ(f(empty({3, 0}), 0).strides(), IntArrayRef({1, 1}));
      EXPECT_EQ(f(empty({2, 3, 0, 5}), 1).strides(), IntArrayRef({15, 5, 5, 1}));
      Tensor cl = empty({2, 3, 0, 5}).to(MemoryFormat::ChannelsLast).requires_grad_();
      Tensor y = f(cl, 1);
      EXPECT_EQ(y.strides(), IntArrayRef({15, 5, 5, 1}));
      sum(y).backward();
      EXPECT_EQ(cl.grad().strides(), IntArrayRef({0, 1, 15, 3}));
    }
  }
  // cross_entropy over [N, C, d] with d == 0 takes log_softmax over dim 1 of an empty tensor.
  Tensor loss = nn::functional::cross_entropy(empty({3, 5, 0}), empty({3, 0}, TensorOptions().dtype(kLong)),
                                              nn::functional::Reduction::Sum);
  EXPECT_EQ(loss.item<double>(), 0.0);
}

TEST(Print, PyTorchStyle) {
  EXPECT_EQ(tensor(std::vector<double>{1, 2, 3}).to_string(), "tensor([1., 2., 3.])");
  EXPECT_EQ(tensor(std::vector<double>{0.5, -1.25}).to_string(), "tensor([ 0.5000, -1.2500])");
  EXPECT_EQ(arange(4).reshape({2, 2}).to_string(), "tensor([[0, 1],\n        [2, 3]])");
  EXPECT_EQ(tensor(std::vector<double>{1, 2}, kDouble).to_string(), "tensor([1., 2.], dtype=torch.float64)");
  EXPECT_EQ(tensor(std::vector<double>{1, 0}, kBool).to_string(), "tensor([ True, False])");
  EXPECT_EQ(scalar_tensor(1.5).to_string(), "tensor(1.5000)");
  EXPECT_EQ(empty({0, 3}).to_string(), "tensor([], size=(0, 3))");
  EXPECT_EQ(tensor(std::vector<double>{1e-5, 1}).to_string(), "tensor([1.0000e-05, 1.0000e+00])");
  std::string big = arange(2000).to_string();
  EXPECT_NE(big.find("tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"), std::string::npos) << big;
  // A channels-last tensor prints in logical order.
  Tensor cl = arange(8).reshape({1, 2, 2, 2}).to(MemoryFormat::ChannelsLast);
  EXPECT_EQ(cl.to_string(), arange(8).reshape({1, 2, 2, 2}).to_string());
}

// PyTorch reduces a 0-d tensor over dim 0 or -1 as over nothing (this crashed); argmax without a
// dim keeps every dim as 1 with keepdim.
TEST(Reduce, ZeroDimTensorsAndFlatArgmaxKeepdim) {
  const Tensor s = scalar_tensor(3.0);
  for (const Tensor& r : {sum(s, {0}), mean(s, {-1}), prod(s, {0}), amax(s, {0}), amin(s, {-1}, true),
                          sum(scalar_tensor(Scalar(int64_t{3})), {0})}) {
    EXPECT_EQ(r.dim(), 0);
    EXPECT_EQ(r.item().to_double(), 3.0);
  }
  EXPECT_TRUE(std::isnan(var(s, {0}).item().to_double()));
  EXPECT_EQ(argmax(s, 0).item().to_long(), 0);
  EXPECT_THROW(sum(s, {1}), Error);
  const Tensor x = arange(0, 24, 1, kFloat).view({2, 3, 4});
  EXPECT_EQ(argmax(x, std::nullopt, true).sizes(), IntArrayRef({1, 1, 1}));
  EXPECT_EQ(argmin(x, std::nullopt, true).item().to_long(), 0);
  EXPECT_EQ(argmax(x).dim(), 0);
}

// max() and min() of a whole tensor with NaN send the gradient to the NaNs, split evenly
// (PyTorch's evenly_distribute_backward); amax's NaN gradient stays NaN there too.
TEST(Reduce, WholeTensorMaxGradientGoesToTheNaNs) {
  for (bool is_max : {true, false}) {
    Tensor a = tensor(std::vector<double>{1.0, NAN, 3.0, NAN}).requires_grad_(true);
    (is_max ? max(a) : min(a)).backward();
    EXPECT_EQ(values(a.grad()), (std::vector<double>{0, 0.5, 0, 0.5}));
    Tensor b = tensor({1.0, 3.0, 3.0, 2.0}).requires_grad_(true);
    (is_max ? max(b) : min(b)).backward();
    EXPECT_EQ(values(b.grad()), is_max ? (std::vector<double>{0, 0.5, 0.5, 0}) : (std::vector<double>{1, 0, 0, 0}));
  }
}

}  // namespace
}  // namespace strider
