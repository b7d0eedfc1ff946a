// The memory-format API: the seed examples, PyTorch's propagation rules (SPEC §8.6) and the
// alias rules of to / contiguous (§6.3-§6.4).
#include <gtest/gtest.h>
#include <strider/core/layout.h>
#include <strider/ops/norm.h>
#include <strider/ops/view.h>
#include <strider/strider.h>

#include <functional>

#include "support/compare.h"

namespace strider {
namespace {

constexpr auto CL = MemoryFormat::ChannelsLast;
constexpr auto CL3d = MemoryFormat::ChannelsLast3d;
constexpr auto Contig = MemoryFormat::Contiguous;

DimVector D(std::initializer_list<int64_t> v) { return DimVector(v); }

TEST(MemoryFormatSeed, StridesMatchTheTutorial) {
  Tensor x = empty({10, 3, 32, 32});
  EXPECT_EQ(x.strides(), IntArrayRef({3072, 1024, 32, 1}));
  Tensor y = x.to(CL);
  EXPECT_EQ(y.strides(), IntArrayRef({3072, 1, 96, 3}));
  EXPECT_EQ(y.sizes(), IntArrayRef({10, 3, 32, 32}));  // logical order stays NCHW
  EXPECT_EQ(empty({10, 3, 16, 16}, CL).strides(), IntArrayRef({768, 1, 48, 3}));
  Tensor amb = empty({4, 1, 4, 4});
  EXPECT_TRUE(amb.is_contiguous());
  EXPECT_TRUE(amb.is_contiguous(CL));
  EXPECT_EQ(empty({2, 3, 2, 3, 4}, CL3d).strides(), IntArrayRef({72, 1, 36, 12, 3}));
}

TEST(MemoryFormatSeed, ConversionKeepsValues) {
  Tensor x = arange(0, 120).reshape({2, 3, 4, 5}).to(kFloat);
  Tensor y = x.to(CL);
  EXPECT_TRUE(equal(x, y));
  EXPECT_TRUE(equal(y.contiguous(), x));
  EXPECT_EQ(y.contiguous().strides(), x.strides());
  // NHWC memory order: element (n, c, h, w) sits at n*60 + h*15 + w*3 + c.
  const float* p = y.data_ptr<float>();
  EXPECT_EQ(p[1], x[0][1][0][0].item<float>());
  EXPECT_EQ(p[3], x[0][0][0][1].item<float>());
}

TEST(MemoryFormatAlias, ToReturnsSelfOnlyWhenTheFormatMatches) {
  Tensor x = empty({2, 3, 4, 5}, CL);
  EXPECT_TRUE(x.to(CL).is_same(x));
  EXPECT_TRUE(x.contiguous(CL).is_same(x));
  EXPECT_TRUE(x.to(MemoryFormat::Preserve).is_same(x));
  EXPECT_FALSE(x.to(Contig).is_same(x));
  // N1HW: contiguous(CL) aliases with NCHW strides; to(CL) copies and restrides the size-1 dim.
  Tensor n1hw = empty({2, 1, 3, 4});
  EXPECT_TRUE(n1hw.contiguous(CL).is_same(n1hw));
  Tensor t = n1hw.to(CL);
  EXPECT_FALSE(t.is_same(n1hw));
  EXPECT_EQ(t.strides(), IntArrayRef({12, 1, 4, 1}));
  EXPECT_EQ(t.suggest_memory_format(), CL);
  // N111 can never carry CL: to(CL) copies on every call with identical strides.
  Tensor n111 = empty({2, 1, 1, 1});
  Tensor a = n111.to(CL), b = a.to(CL);
  EXPECT_FALSE(b.is_same(a));
  EXPECT_EQ(b.strides(), IntArrayRef({1, 1, 1, 1}));
}

TEST(MemoryFormatPreserve, LikeAndCloneCopyDenseStridesAndDensifyOthers) {
  Tensor nc11 = empty({2, 3, 1, 1}).to(CL);
  EXPECT_EQ(empty_like(nc11).strides(), IntArrayRef({3, 1, 3, 3}));
  Tensor expanded = empty({1, 3, 1, 1}).expand({2, 3, 4, 5});
  EXPECT_EQ(empty_like(expanded).strides(), IntArrayRef({60, 20, 5, 1}));
  Tensor gapped = empty({2, 3, 8, 10}, CL).slice(2, 0, std::nullopt, 2).slice(3, 0, std::nullopt, 2);
  EXPECT_EQ(gapped.strides(), IntArrayRef({240, 1, 60, 6}));
  EXPECT_EQ(gapped.clone().strides(), IntArrayRef({60, 1, 15, 3}));
  Tensor perm = empty({3, 24, 4}).permute({0, 2, 1}).slice(2, 0, 3);  // [3,4,3]@[96,1,4]
  EXPECT_EQ(zeros_like(perm).strides(), IntArrayRef(layout::infer_dense_strides(perm.sizes(), perm.strides())));
  EXPECT_EQ(ones_like(gapped, Contig).strides(), IntArrayRef({60, 20, 5, 1}));
  EXPECT_THROW(empty_like(empty({3, 4}), CL), Error);
  // 7-d random permutations keep their strides through every preserve conversion.
  Tensor seven = empty({2, 3, 2, 2, 3, 2, 2}).permute({3, 1, 6, 0, 5, 2, 4});
  EXPECT_EQ(seven.clone().strides(), seven.strides());
  EXPECT_EQ(seven.to(kDouble).strides(), seven.strides());
  EXPECT_EQ(rand_like(seven).strides(), seven.strides());
}

TEST(MemoryFormatPropagation, TensorIteratorRules) {
  Tensor cl = rand({2, 3, 4, 5}).to(CL);
  Tensor contig = rand({2, 3, 4, 5});
  Tensor bias = rand({1, 3, 1, 1});
  const DimVector kCL = {60, 1, 15, 3}, kNCHW = {60, 20, 5, 1};
  EXPECT_EQ((cl + contig).strides(), IntArrayRef(kCL));
  EXPECT_EQ((contig + cl).strides(), IntArrayRef(kNCHW));
  EXPECT_EQ((bias + cl).strides(), IntArrayRef(kCL));
  EXPECT_EQ((cl * 5.0).strides(), IntArrayRef(kCL));
  EXPECT_EQ((rand({3, 4, 5}) + cl).strides(), IntArrayRef(kNCHW));
  EXPECT_EQ((cl + rand({3, 4, 5})).strides(), IntArrayRef(kCL));
  Tensor hw_t = rand({2, 3, 5, 4}).transpose(2, 3);
  EXPECT_EQ((hw_t + cl).strides(), IntArrayRef({60, 20, 1, 4}));
  Tensor exp_b = rand({1, 3, 1, 1}).expand({2, 3, 4, 5});
  EXPECT_EQ((exp_b + cl).strides(), IntArrayRef(kCL));
  EXPECT_EQ((exp_b + exp_b).strides(), IntArrayRef(kNCHW));
  // Ambiguous NC11: fast path canonicalises; a 0-d operand keeps the CL size-1 strides.
  Tensor nc11_cl = rand({2, 3, 1, 1}).to(CL);
  EXPECT_EQ(relu(nc11_cl).strides(), IntArrayRef({3, 1, 1, 1}));
  EXPECT_EQ((nc11_cl + 1.5).strides(), IntArrayRef({3, 1, 3, 3}));
  EXPECT_EQ((nc11_cl + rand({3, 1, 1})).strides(), IntArrayRef({3, 1, 3, 3}));
  // Type promotion densifies first: an expanded int64 operand decides NCHW.
  Tensor int_exp = arange(3).reshape({1, 3, 1, 1}).expand({2, 3, 4, 5});
  EXPECT_EQ((int_exp + cl).strides(), IntArrayRef(kNCHW));
  EXPECT_EQ((int_exp + cl).dtype(), kFloat);
  // Size-0 dims zero the strides outside them on the general path.
  Tensor e = empty_strided({0, 2, 2, 4}, {4, 4, 8, 1});
  EXPECT_EQ((e + 1.5).strides(), IntArrayRef({4, 0, 0, 1}));
}

TEST(MemoryFormatPropagation, ReductionsSoftmaxAndMaskedFillAreContiguous) {
  Tensor cl = rand({2, 3, 4, 5}).to(CL);
  EXPECT_EQ(sum(cl, {1}, true).strides(), IntArrayRef({20, 20, 5, 1}));
  EXPECT_EQ(mean(cl, {2, 3}, true).strides(), IntArrayRef({3, 1, 1, 1}));
  EXPECT_EQ(softmax(cl, 1).strides(), IntArrayRef({60, 20, 5, 1}));
  EXPECT_EQ(masked_fill(cl, gt(cl, 0.5), 0.0).strides(), IntArrayRef({60, 20, 5, 1}));
}

TEST(MemoryFormatPropagation, CatUsesTheCommonSuggestedFormat) {
  Tensor cl = rand({2, 3, 4, 5}).to(CL), contig = rand({2, 3, 4, 5});
  EXPECT_EQ(cat({cl, cl}, 1).suggest_memory_format(), CL);
  EXPECT_EQ(cat({cl, contig}, 1).suggest_memory_format(), Contig);
  EXPECT_EQ(cat({contig, cl}, 0).suggest_memory_format(), Contig);
  for (int64_t d = 0; d < 4; ++d) {
    Tensor r = cat({cl, cl}, d);
    EXPECT_TRUE(r.is_contiguous(CL));
    EXPECT_TRUE(equal(r, cat({cl.contiguous(), cl.contiguous()}, d)));
  }
  Tensor s = stack({cl, cl}, 0);
  EXPECT_EQ(s.strides(), IntArrayRef({120, 60, 1, 15, 3}));
  Tensor cl3d = rand({2, 3, 2, 3, 4}).to(CL3d);
  EXPECT_EQ(cat({cl3d, cl3d}, 2).suggest_memory_format(), CL3d);
}

TEST(MemoryFormatResize, ResizeRestridesPerFormat) {
  for (auto sizes : std::vector<DimVector>{{4, 4, 4, 4}, {4, 4, 1, 1}, {4, 1, 4, 4}, {4, 1, 4, 1},
                                           {4, 1, 1, 4}, {1, 4, 1, 4}, {1, 4, 4, 1}}) {
    Tensor t = empty({0});
    t.resize_(sizes, CL);
    EXPECT_EQ(t.suggest_memory_format(), CL) << IntArrayRef(sizes);
    t.resize_(sizes, Contig);
    EXPECT_EQ(t.suggest_memory_format(), Contig);
  }
  Tensor n111 = empty({0});
  n111.resize_({4, 1, 1, 1}, CL);
  EXPECT_EQ(n111.suggest_memory_format(), Contig);
  Tensor cl = empty({2, 3, 4, 5}, CL);
  cl.resize_({2, 3, 4, 5});
  EXPECT_TRUE(cl.is_contiguous(CL));  // same size keeps strides
  cl.resize_({1, 3, 4, 5});
  EXPECT_TRUE(cl.is_contiguous());  // a new size restrides contiguous
  Tensor flat = empty({0});
  flat.resize_as_(empty({2, 3, 4, 5}, CL), MemoryFormat::Preserve);
  EXPECT_TRUE(flat.is_contiguous(CL));
  EXPECT_THROW(flat.resize_({2, 3}, MemoryFormat::Preserve), Error);
}

TEST(MemoryFormatErrors, WrongRankAndPreserveAreClear) {
  EXPECT_THROW(empty({3, 3}, CL), Error);
  EXPECT_THROW(empty({2, 3, 4, 5}, CL3d), Error);
  EXPECT_THROW(empty({2, 3}, MemoryFormat::Preserve), Error);
  EXPECT_THROW(rand({3, 4, 5}).to(CL), Error);
  EXPECT_THROW(rand({2, 3, 4, 5, 6}).to(CL), Error);
  EXPECT_THROW(rand({2, 3, 4, 5}).contiguous(CL3d), Error);
  EXPECT_THROW(rand({2, 3}).t().contiguous(MemoryFormat::Preserve), Error);
  try {
    rand({3, 4, 5}).clone(CL);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("[clone]"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 3"), std::string::npos) << m;
  }
}

TEST(MemoryFormatCheckMode, RaisesWhenAnOpLosesChannelsLast) {
  Tensor cl = rand({2, 3, 4, 5}).to(CL);
  Tensor contig = rand({2, 3, 4, 5});
  MemoryFormatCheckGuard on(true);
  EXPECT_NO_THROW(relu(cl));
  EXPECT_NO_THROW(cl + contig);
  EXPECT_NO_THROW(sum(cl, {1}, true));  // reductions are documented contiguous
  try {
    contig + cl;  // the first input decides: NCHW output from a CL input
    FAIL() << "expected the check to fire";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("[add]"), std::string::npos) << m;
    EXPECT_NE(m.find("[60, 1, 15, 3]"), std::string::npos) << m;
  }
  EXPECT_THROW(cat({cl, contig}, 1), Error);
}

TEST(MemoryFormatCheckMode, OffByDefault) {
  EXPECT_FALSE(memory_format_check_enabled());
  Tensor cl = rand({2, 3, 4, 5}).to(CL);
  EXPECT_NO_THROW(rand({2, 3, 4, 5}) + cl);
}


// ---- Ambiguous and empty channels-last tensors (C == 1, H == W == 1, a zero-size dim): only the
// strides of size-1 or empty dims tell the formats apart, and PyTorch 1.13 still picks one.
// Expected strides from tests/golden/generate_ambiguous_strides.py.
namespace ambiguous {

Tensor leaf(std::vector<int64_t> shape, MemoryFormat fmt) {
  Tensor x = arange(0, static_cast<double>(checked_numel(shape, "leaf"))).to(kFloat).reshape(shape).to(fmt);
  x.requires_grad_();
  return x;
}

// x.grad's strides after f(x).sum().backward().
DimVector grad_strides_of_sum(Tensor x, const std::function<Tensor(const Tensor&)>& f) {
  sum(f(x)).backward();
  return x.grad().strides().vec();
}

TEST(MemoryFormatAmbiguous, Pool3dOfOneChannelIsFreshlyContiguous) {
  for (bool is_max : {true, false}) {
    auto pool = [is_max](const Tensor& t) { return is_max ? max_pool3d(t, {2}, {1}) : avg_pool3d(t, {2}, {1}); };
    Tensor x1 = leaf({2, 1, 2, 3, 4}, CL3d);
    EXPECT_EQ(pool(x1).strides(), IntArrayRef({6, 6, 6, 3, 1})) << is_max;
    EXPECT_EQ(grad_strides_of_sum(x1, pool), D({24, 24, 12, 4, 1})) << is_max;
    Tensor x3 = leaf({2, 3, 2, 3, 4}, CL3d);
    EXPECT_EQ(pool(x3).strides(), IntArrayRef({18, 6, 6, 3, 1})) << is_max;
    EXPECT_EQ(grad_strides_of_sum(x3, pool), D({72, 1, 36, 12, 3})) << is_max;
    // 2-d pooling keeps channels-last, C == 1 included.
    auto pool2 = [is_max](const Tensor& t) { return is_max ? max_pool2d(t, {2}, {1}) : avg_pool2d(t, {2}, {1}); };
    Tensor x2 = leaf({2, 1, 4, 5}, CL);
    EXPECT_EQ(pool2(x2).strides(), IntArrayRef({12, 1, 4, 1})) << is_max;
    EXPECT_EQ(grad_strides_of_sum(x2, pool2), D({20, 1, 5, 1})) << is_max;
  }
}

TEST(MemoryFormatAmbiguous, DropoutOfAnEmptyTensorIsTheTensorItself) {
  for (auto [shape, strides] : {std::pair{D({0, 3, 4, 5}), D({60, 1, 15, 3})}, std::pair{D({2, 3, 0, 5}), D({0, 1, 15, 3})}}) {
    Tensor x = empty(shape).to(CL);
    Tensor y = nn::functional::dropout(x, 0.5, true);
    EXPECT_EQ(y.strides(), IntArrayRef(strides)) << shape;
    EXPECT_TRUE(y.is_same(x)) << shape;
  }
}

TEST(MemoryFormatAmbiguous, GroupNormOfAnEmptyBatchIsEmptyAndContiguous) {
  EXPECT_EQ(nn::functional::group_norm(empty({0, 3, 4, 5}).to(CL), 3).strides(), IntArrayRef({60, 20, 5, 1}));
  EXPECT_EQ(nn::functional::group_norm(empty({0, 3, 4, 5}), 1).strides(), IntArrayRef({60, 20, 5, 1}));
  EXPECT_EQ(nn::functional::group_norm(empty({0, 1, 4, 5}).to(CL), 1).strides(), IntArrayRef({20, 20, 5, 1}));
}

// Gradients of ambiguous channels-last leaves: the backward's own layout decides the strides of
// size-1 dims (AccumulateGrad keeps a gradient that matches the leaf on the other dims).
TEST(MemoryFormatAmbiguous, GradientsOfOneChannelAndOnePixelLeaves) {
  auto bn = [](const Tensor& t) {
    return batch_norm(t, Tensor(), Tensor(), ones({t.size(1)}), zeros({t.size(1)}), true);
  };
  EXPECT_EQ(grad_strides_of_sum(leaf({2, 3, 1, 1}, CL), bn), D({3, 1, 3, 3}));
  EXPECT_EQ(grad_strides_of_sum(leaf({2, 1, 4, 5}, CL), bn), D({20, 1, 5, 1}));
  EXPECT_EQ(grad_strides_of_sum(leaf({2, 1, 2, 3, 4}, CL3d), bn), D({24, 1, 12, 4, 1}));
  // Both dense and suggesting one format: the forward's contiguous-first choice (PyTorch's fast path).
  Tensor x = ops::as_strided(arange(0, 144).to(kFloat), {1, 16, 9, 1}, {144, 1, 16, 144});
  EXPECT_EQ(ops::batch_norm_backward_memory_format(x, ones({1, 16, 9, 1})), CL);
  EXPECT_EQ(ops::batch_norm_backward_memory_format(x, ones({1, 16, 9, 1}).to(CL)), Contig);
  auto clamp11 = [](const Tensor& t) { return clamp(t, Scalar(-1.0), Scalar(1.0)); };
  EXPECT_EQ(grad_strides_of_sum(leaf({2, 1, 4, 5}, CL), clamp11), D({20, 1, 5, 1}));
  EXPECT_EQ(grad_strides_of_sum(leaf({2, 3, 1, 1}, CL), clamp11), D({3, 1, 3, 3}));
  EXPECT_EQ(grad_strides_of_sum(leaf({2, 1, 4, 5}, CL), [](const Tensor& t) { return mean(t, {2, 3}, true); }),
            D({20, 20, 5, 1}));
  EXPECT_EQ(grad_strides_of_sum(leaf({2, 3, 1, 1}, CL), [](const Tensor& t) { return adaptive_avg_pool2d(t, {1, 1}); }),
            D({3, 1, 1, 1}));
  EXPECT_EQ(grad_strides_of_sum(leaf({2, 1, 4, 5}, CL), [](const Tensor& t) { return adaptive_avg_pool2d(t, {1, 1}); }),
            D({20, 20, 5, 1}));
}

// Gradients whose last op decides the layout from the saved input (silu_backward(g, x)), a
// split whose one piece still goes through cat, a cumsum along a dim of one passing its gradient
// as it came, and Python's `2 / x` (x.reciprocal() * 2).
TEST(MemoryFormatAmbiguous, GradientsThatFollowPyTorchsLastOp) {
  EXPECT_EQ(grad_strides_of_sum(leaf({2, 1, 4, 5}, CL), [](const Tensor& t) { return silu(t); }), D({20, 1, 5, 1}));
  EXPECT_EQ(grad_strides_of_sum(leaf({2, 3, 1, 1}, CL), [](const Tensor& t) { return silu(t); }), D({3, 1, 3, 3}));
  EXPECT_EQ(grad_strides_of_sum(leaf({2, 1, 4, 5}, CL), [](const Tensor& t) { return split(t, 1, 1)[0]; }),
            D({20, 20, 5, 1}));
  EXPECT_EQ(grad_strides_of_sum(leaf({2, 3, 1, 1}, CL), [](const Tensor& t) { return cumsum(t, 3); }), D({3, 1, 3, 3}));
  for (auto shape : {std::vector<int64_t>{2, 1, 4, 5}, std::vector<int64_t>{2, 3, 1, 1}}) {
    Tensor x = leaf(shape, CL);
    EXPECT_EQ((2.0 / x).strides(), IntArrayRef(layout::contiguous_strides(shape))) << shape[1];
    EXPECT_EQ(grad_strides_of_sum(x, [](const Tensor& t) { return 2.0 / t; }), layout::contiguous_strides(shape)) << shape[1];
  }
}

}  // namespace ambiguous

}  // namespace
}  // namespace strider
