// The engine's behaviour: accumulation, graph reuse, hooks, layouts, modes and misuse.
#include <gtest/gtest.h>

#include <limits>
#include <strider/autograd/grad_buffer.h>
#include <strider/strider.h>

#include "support/compare.h"

namespace strider {
namespace {

using testing::all_close;
using testing::values;

TEST(Autograd, AccumulatesAcrossUsesAndCalls) {
  Tensor x = tensor(std::vector<double>{1, 2, 3}).requires_grad_();
  Tensor y = sum(x * x + x);  // dy/dx = 2x + 1
  y.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{3, 5, 7}));
  sum(x * 2.0).backward();  // accumulates
  EXPECT_EQ(values(x.grad()), (std::vector<double>{5, 7, 9}));
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(y.grad_fn()->name(), "SumBackward");
}

TEST(Autograd, DiamondGraphSumsBranches) {
  Tensor x = tensor(std::vector<double>{0.5}).requires_grad_();
  Tensor a = exp(x), b = a * a, c = a + b;  // c = e^x + e^2x
  c.backward();
  EXPECT_NEAR(x.grad().item<double>(), std::exp(0.5) + 2 * std::exp(1.0), 1e-5);
}

TEST(Autograd, RetainGraph) {
  Tensor x = tensor(std::vector<double>{2}).requires_grad_();
  Tensor y = x * x;
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  EXPECT_EQ(x.grad().item<double>(), 8.0);
  EXPECT_THROW(y.backward(), Error);  // the graph was freed
}

TEST(Autograd, GradMatchesLeafLayout) {
  // A channels-last parameter gets a channels-last gradient even when the gradient flowing in
  // is contiguous (PyTorch's test_strided_leaf_grad_layout).
  Tensor w = rand({2, 3, 4, 5}).to(MemoryFormat::ChannelsLast).requires_grad_();
  sum(w.contiguous() * 2.0).backward();
  EXPECT_EQ(w.grad().strides(), w.strides());
  EXPECT_TRUE(all_close(w.grad(), full({2, 3, 4, 5}, 2.0), 0, 0));
}

// PyTorch's layout contract looks only at dims of size above 1: a [2, 3, 1, 1] channels-last leaf
// keeps the contiguous gradient that arrives, (3, 1, 1, 1) as in PyTorch 1.13, not (3, 1, 3, 3).
TEST(Autograd, GradLayoutIgnoresSizeOneDims) {
  Tensor w = rand({2, 3, 1, 1}).to(MemoryFormat::ChannelsLast).requires_grad_();
  ASSERT_EQ(w.strides(), IntArrayRef({3, 1, 3, 3}));
  sum(w * 2.0).backward();
  EXPECT_EQ(w.grad().strides(), IntArrayRef({3, 1, 1, 1}));
  EXPECT_TRUE(all_close(w.grad(), full({2, 3, 1, 1}, 2.0), 0, 0));
  // A non-dense leaf's gradient is contiguous.
  Tensor base = rand({4, 6}).requires_grad_();
  Tensor strided = base.detach().narrow(1, 0, 3).requires_grad_();
  sum(strided * 3.0).backward();
  EXPECT_TRUE(strided.grad().is_contiguous());
}

// A convolution's weight gradient comes in the convolution's memory format (PyTorch's mkldnn
// backward), so a contiguous depthwise weight under a channels-last input keeps the channels-last
// gradient, whose strides differ only on the size-1 dim: (9, 1, 3, 1) as in PyTorch 1.13.
TEST(Autograd, DepthwiseWeightGradientUnderChannelsLastInput) {
  Tensor x = rand({2, 4, 7, 6}).contiguous(MemoryFormat::ChannelsLast).requires_grad_();
  Tensor w = rand({4, 1, 3, 3}).requires_grad_();
  sum(conv2d(x, w, Tensor(), {1}, {1}, {1}, 4)).backward();
  EXPECT_EQ(w.grad().strides(), IntArrayRef({9, 1, 3, 1}));
  Tensor w2 = rand({4, 2, 3, 3}).requires_grad_();  // differs on a dim above 1: the parameter's layout
  sum(conv2d(x.detach(), w2, Tensor(), {1}, {1}, {1}, 2)).backward();
  EXPECT_EQ(w2.grad().strides(), IntArrayRef({18, 9, 3, 1}));
}

// A gradient buffer (autograd/grad_buffer.h): the first backward copies into it (the bits the
// gradient had, a negative zero included) and makes it .grad(); later ones add in place; any
// other .grad() accumulates out of place as always.
TEST(Autograd, GradBufferTakesTheFirstGradientAndAccumulatesInPlace) {
  Tensor x = tensor(std::vector<double>{1, -2, 3}).requires_grad_();
  Tensor flat = full({7}, -1.0);
  Tensor view = flat.narrow(0, 2, 3);
  autograd::set_grad_buffer(x, view);
  EXPECT_TRUE(autograd::grad_buffer(x).is_same(view));
  sum(x * tensor(std::vector<double>{2, -0.0, 1})).backward();  // gradient [2, -0, 1]
  EXPECT_TRUE(x.grad().is_same(view));
  EXPECT_EQ(values(flat), (std::vector<double>{-1, -1, 2, 0, 1, -1, -1}));
  EXPECT_TRUE(std::signbit(flat[3].item<double>()));
  const Tensor earlier = x.grad();
  sum(x * x).backward();  // + 2x, in place
  EXPECT_EQ(values(flat), (std::vector<double>{-1, -1, 4, -4, 7, -1, -1}));
  EXPECT_EQ(values(earlier), (std::vector<double>{4, -4, 7}));
  x.set_grad(Tensor());  // zero_grad: the next backward copies again
  sum(x).backward();
  EXPECT_EQ(values(view), (std::vector<double>{1, 1, 1}));
  x.set_grad(ones({3}));  // a .grad() of the user's own: out of place, the buffer untouched
  sum(x).backward();
  EXPECT_FALSE(x.grad().is_same(view));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(values(view), (std::vector<double>{1, 1, 1}));
  autograd::set_grad_buffer(x, Tensor());
  x.set_grad(Tensor());
  sum(x).backward();
  EXPECT_FALSE(x.grad().is_same(view));
  EXPECT_THROW(autograd::set_grad_buffer(x, zeros({4})), Error);
  EXPECT_THROW(autograd::set_grad_buffer(x, zeros({3}, kDouble)), Error);
  EXPECT_THROW(autograd::set_grad_buffer(x * 2.0, zeros({3})), Error);
}

TEST(Autograd, NoGradAndDetach) {
  Tensor x = rand({3}).requires_grad_();
  {
    NoGradGuard g;
    Tensor y = x * 2.0;
    EXPECT_FALSE(y.requires_grad());
  }
  Tensor d = x.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(d.storage(), x.storage());
  EXPECT_FALSE(eq(x, x).requires_grad());
  EXPECT_THROW(sum(d).backward(), Error);
  EXPECT_THROW((x * 2.0).requires_grad_(false), Error);
  EXPECT_THROW(arange(3).requires_grad_(), Error);
}

TEST(Autograd, HooksRunAndCanReplaceGradients) {
  Tensor x = tensor(std::vector<double>{1, 2}).requires_grad_();
  Tensor y = x * 3.0;
  std::vector<double> seen;
  y.register_hook([&](const Tensor& g) {
    seen = values(g);
    return g * 10.0;
  });
  int post = 0;
  x.register_post_accumulate_grad_hook([&](const Tensor& t) { post += static_cast<int>(t.grad().numel()); });
  sum(y).backward();
  EXPECT_EQ(seen, (std::vector<double>{1, 1}));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{30, 30}));
  EXPECT_EQ(post, 2);
}

TEST(Autograd, LeafHookAndRetainGrad) {
  Tensor x = tensor(std::vector<double>{1, 2}).requires_grad_();
  int id = x.register_hook([](const Tensor& g) { return g * 0.5; });
  Tensor y = x * x;
  y.retain_grad();
  sum(y).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 2}));
  EXPECT_EQ(values(y.grad()), (std::vector<double>{1, 1}));
  x.remove_hook(id);
  x.set_grad(Tensor());
  sum(x * x).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2, 4}));
}

// A hook that changes a gradient's shape or dtype is refused, as PyTorch refuses it (a [1]
// gradient on a [2] leaf broadcast into SGD's update); so is a .grad of another dtype.
TEST(Autograd, HooksAndSetGradKeepShapeAndDtype) {
  Tensor w = tensor(std::vector<double>{1, 2}).requires_grad_();
  w.register_hook([](const Tensor& g) { return sum(g).view({1}); });
  EXPECT_THROW(sum(w * 3.0).backward(), Error);
  Tensor v = tensor(std::vector<double>{1, 2}).requires_grad_();
  v.register_hook([](const Tensor& g) { return g.to(kDouble); });
  EXPECT_THROW(sum(v * 3.0).backward(), Error);
  Tensor x = tensor(std::vector<double>{1, 2}).requires_grad_();
  Tensor y = x * 2.0;
  y.register_hook([](const Tensor& g) { return cat({g, g}, 0); });
  EXPECT_THROW(sum(y).backward(), Error);
  EXPECT_THROW(x.set_grad(ones({2}, kDouble)), Error);
  EXPECT_THROW(x.set_grad(ones({2}, kLong)), Error);
  x.set_grad(ones({2}));
}

TEST(Autograd, InPlaceRulesAndVersionChecks) {
  Tensor w = rand({3}).requires_grad_();
  EXPECT_THROW(w.add_(ones({3})), Error);  // a leaf autograd needs
  {
    NoGradGuard g;
    EXPECT_NO_THROW(w.add_(ones({3})));  // the optimizer's way
  }
  Tensor data = rand({3});
  Tensor y = sum(w * data);
  data.mul_(2.0);  // modifies a tensor saved for backward
  EXPECT_THROW(y.backward(), Error);
}

TEST(Autograd, GradFunctionDoesNotTouchLeaves) {
  Tensor x = tensor(std::vector<double>{1, 2, 3}).requires_grad_();
  Tensor y = sum(pow(x, 3.0));
  auto g = autograd::grad({y}, {x});
  EXPECT_EQ(values(g[0]), (std::vector<double>{3, 12, 27}));
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, NonScalarBackwardNeedsGradient) {
  Tensor x = rand({2, 2}).requires_grad_();
  Tensor y = x * 2.0;
  EXPECT_THROW(y.backward(), Error);
  y.backward(ones({2, 2}));
  EXPECT_TRUE(all_close(x.grad(), full({2, 2}, 2.0), 0, 0));
}

TEST(Autograd, CustomFunctionThroughRecord) {
  // A user-defined op: forward computes without grad, record() attaches the backward.
  auto cube = [](const Tensor& x) {
    Tensor y;
    {
      NoGradGuard g;
      y = x * x * x;
    }
    autograd::SavedTensor sx(x);
    return autograd::record("CubeBackward", {&x}, y, [sx](const std::vector<Tensor>& g, const autograd::Node&) {
      Tensor xx = sx.unpack("cube");
      return std::vector<Tensor>{g[0] * xx * xx * 3.0};
    });
  };
  Tensor x = tensor(std::vector<double>{2}).requires_grad_();
  cube(x).backward();
  EXPECT_EQ(x.grad().item<double>(), 12.0);
}

TEST(Autograd, MixedDtypeGradientsComeBackInTheInputDtype) {
  Tensor a = tensor(std::vector<double>{1, 2}).requires_grad_();
  Tensor b = tensor(std::vector<double>{3, 4}, kDouble).requires_grad_();
  sum(a * b).backward();
  EXPECT_EQ(a.grad().dtype(), kFloat);
  EXPECT_EQ(b.grad().dtype(), kDouble);
  EXPECT_EQ(values(a.grad()), (std::vector<double>{3, 4}));
}

// PyTorch's where backward puts zeros_like(grad) on the side not taken, and pow's with exponent 0
// is zeros_like: an infinite incoming gradient (a mean over nothing) gives 0 there, not inf * 0.
TEST(Autograd, SidesNotTakenGetZeroEvenFromAnInfiniteGradient) {
  Tensor x = tensor(std::vector<double>{1, 2, 3}, kDouble).requires_grad_();
  Tensor keep = tensor(std::vector<double>{1, 0, 1}, kDouble).to(kBool);
  Tensor y = where(keep, x, Scalar(0.0));
  y.backward(full({3}, std::numeric_limits<double>::infinity(), kDouble));
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{inf, 0, inf}));
  Tensor z = tensor(std::vector<double>{1, 2}, kDouble).requires_grad_();
  pow(z, 0.0).backward(full({2}, inf, kDouble));
  EXPECT_EQ(values(z.grad()), (std::vector<double>{0, 0}));
}

}  // namespace
}  // namespace strider
