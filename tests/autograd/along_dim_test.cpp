// sort, topk, cumsum, gather and scatter_add against PyTorch 1.13: values, indices and the
// gradient of sum(y * w) for x = sin(0.37 * arange(24)).reshape(2, 3, 4) in float64 (no ties),
// generated once; ties and NaN as PyTorch orders them; layouts; gradchecks; refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <strider/strider.h>

#include "support/compare.h"
#include "support/gradcheck.h"
#include "support/golden_values.h"

namespace strider {
namespace {

using V = std::vector<Tensor>;
using testing::from_values;

using testing::sine_input;

struct Golden {
  const char* name;
  std::vector<int64_t> shape;
  std::vector<double> value, indices, grad;
};

const Golden kGolden[] = {
  {"sort_d1", {2, 3, 4}, {0.0, -0.18729466354290317, -0.5298361409084934, -0.8006667821758177, 0.18059626789423291, 0.361615431964962, 0.674287911628145, 0.5240443416872761, 0.99588084453764, 0.9612752029752999, 0.7965654722360868, 0.8956986856800476, -0.9631309305733164, -0.9952398257691627, -0.8926476794282346, -0.669239857276262, -0.35525355998804264, 0.006814640074770176, 0.36796051057238466, 0.6793046521448148, 0.8987080958116269, 0.9964756147406005, 0.9593748338928642, 0.7924271699085284}, {0.0, 2.0, 2.0, 2.0, 2.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0}, {-1.0, -0.5652173913043479, -0.4782608695652174, -0.043478260869565244, -0.30434782608695654, -0.2173913043478261, -0.13043478260869568, -0.391304347826087, -0.6521739130434783, -0.9130434782608696, -0.8260869565217391, -0.7391304347826086, 0.043478260869565244, 0.13043478260869568, 0.2173913043478261, 0.30434782608695654, 0.391304347826087, 0.4782608695652174, 0.5652173913043479, 0.6521739130434783, 0.7391304347826086, 0.826086956521739, 0.9130434782608695, 1.0}},
  {"sort_last_desc", {2, 3, 4}, {0.8956986856800476, 0.674287911628145, 0.361615431964962, 0.0, 0.99588084453764, 0.9612752029752999, 0.7965654722360868, 0.5240443416872761, 0.18059626789423291, -0.18729466354290317, -0.5298361409084934, -0.8006667821758177, -0.669239857276262, -0.8926476794282346, -0.9631309305733164, -0.9952398257691627, 0.6793046521448148, 0.36796051057238466, 0.006814640074770176, -0.35525355998804264, 0.9964756147406005, 0.9593748338928642, 0.8987080958116269, 0.7924271699085284}, {3.0, 2.0, 1.0, 0.0, 0.0, 1.0, 2.0, 3.0, 0.0, 1.0, 2.0, 3.0, 3.0, 2.0, 0.0, 1.0, 3.0, 2.0, 1.0, 0.0, 1.0, 2.0, 0.0, 3.0}, {-0.7391304347826086, -0.8260869565217391, -0.9130434782608696, -1.0, -0.6521739130434783, -0.5652173913043479, -0.4782608695652174, -0.391304347826087, -0.30434782608695654, -0.2173913043478261, -0.13043478260869568, -0.043478260869565244, 0.2173913043478261, 0.30434782608695654, 0.13043478260869568, 0.043478260869565244, 0.6521739130434783, 0.5652173913043479, 0.4782608695652174, 0.391304347826087, 0.9130434782608695, 0.7391304347826086, 0.826086956521739, 1.0}},
  {"topk2_d2", {2, 3, 2}, {0.8956986856800476, 0.674287911628145, 0.99588084453764, 0.9612752029752999, 0.18059626789423291, -0.18729466354290317, -0.669239857276262, -0.8926476794282346, 0.6793046521448148, 0.36796051057238466, 0.9964756147406005, 0.9593748338928642}, {3.0, 2.0, 0.0, 1.0, 0.0, 1.0, 3.0, 2.0, 3.0, 2.0, 1.0, 2.0}, {0.0, 0.0, -0.9130434782608696, -1.0, -0.8260869565217391, -0.7391304347826086, 0.0, 0.0, -0.6521739130434783, -0.5652173913043479, 0.0, 0.0, 0.0, 0.0, -0.391304347826087, -0.4782608695652174, 0.0, 0.0, -0.2173913043478261, -0.30434782608695654, 0.0, -0.13043478260869568, -0.043478260869565244, 0.0}},
  {"topk2_d1_smallest", {2, 2, 4}, {0.0, -0.18729466354290317, -0.5298361409084934, -0.8006667821758177, 0.18059626789423291, 0.361615431964962, 0.674287911628145, 0.5240443416872761, -0.9631309305733164, -0.9952398257691627, -0.8926476794282346, -0.669239857276262, -0.35525355998804264, 0.006814640074770176, 0.36796051057238466, 0.6793046521448148}, {0.0, 2.0, 2.0, 2.0, 2.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0}, {-1.0, -0.5652173913043479, -0.4782608695652174, 0.0, 0.0, 0.0, 0.0, -0.391304347826087, -0.6521739130434783, -0.9130434782608696, -0.8260869565217391, -0.7391304347826086, -0.30434782608695654, -0.2173913043478261, -0.13043478260869568, -0.043478260869565244, 0.043478260869565244, 0.13043478260869568, 0.2173913043478261, 0.30434782608695654, 0.0, 0.0, 0.0, 0.0}},
  {"cumsum_d1", {2, 3, 4}, {0.0, 0.361615431964962, 0.674287911628145, 0.8956986856800476, 0.99588084453764, 1.3228906349402618, 1.470853383864232, 1.4197430273673237, 1.176477112431873, 1.1355959713973587, 0.9410172429557385, 0.6190762451915061, -0.9631309305733164, -0.9952398257691627, -0.8926476794282346, -0.669239857276262, -1.318384490561359, -0.9884251856943925, -0.52468716885585, 0.010064794868552829, -0.4196763947497322, 0.008050429046208007, 0.43468766503701417, 0.8024919647770812}, {}, {-1.9565217391304348, -1.6956521739130437, -1.4347826086956523, -1.1739130434782608, -0.9565217391304348, -0.7826086956521741, -0.6086956521739131, -0.4347826086956522, -0.30434782608695654, -0.2173913043478261, -0.13043478260869568, -0.043478260869565244, 1.1739130434782608, 1.4347826086956523, 1.6956521739130435, 1.9565217391304348, 1.1304347826086956, 1.3043478260869565, 1.4782608695652173, 1.6521739130434783, 0.7391304347826086, 0.826086956521739, 0.9130434782608695, 1.0}},
  {"gather_d2", {2, 3, 3}, {0.0, 0.8956986856800476, 0.674287911628145, 0.7965654722360868, 0.9612752029752999, 0.99588084453764, 0.18059626789423291, -0.8006667821758177, -0.5298361409084934, -0.9952398257691627, -0.9631309305733164, -0.669239857276262, 0.6793046521448148, 0.36796051057238466, 0.006814640074770176, 0.9964756147406005, 0.8987080958116269, 0.7924271699085284}, {}, {-1.0, 0.0, -0.8260869565217391, -0.9130434782608696, -0.5652173913043479, -0.6521739130434783, -0.7391304347826086, 0.0, -0.4782608695652174, 0.0, -0.30434782608695654, -0.391304347826087, -0.13043478260869568, -0.2173913043478261, 0.0, -0.043478260869565244, 0.0, 0.2173913043478261, 0.13043478260869568, 0.043478260869565244, 0.391304347826087, 0.30434782608695654, 0.0, 0.4782608695652174}},
  {"scatter_add_src", {2, 3, 4}, {0.0, 0.0, 0.674287911628145, 0.361615431964962, 0.7965654722360868, 0.9612752029752999, 0.99588084453764, 0.0, 0.18059626789423291, 0.0, -0.5298361409084934, -0.18729466354290317, -0.9952398257691627, -0.9631309305733164, 0.0, -0.8926476794282346, 0.0, 0.36796051057238466, 0.006814640074770176, -0.35525355998804264, 0.9964756147406005, 0.8987080958116269, 0.0, 0.9593748338928642}, {}, {-1.0, -0.7391304347826086, -0.8260869565217391, 0.0, -0.4782608695652174, -0.5652173913043479, -0.6521739130434783, 0.0, -0.30434782608695654, -0.043478260869565244, -0.13043478260869568, 0.0, 0.13043478260869568, 0.043478260869565244, 0.30434782608695654, 0.0, 0.6521739130434783, 0.5652173913043479, 0.4782608695652174, 0.0, 0.826086956521739, 0.7391304347826086, 1.0, 0.0}},
};

// idx[i][j][k] = (i + 2j + 3k) % 4, shape [2, 3, 3].
Tensor index() {
  std::vector<double> v;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) v.push_back((i + 2 * j + 3 * k) % 4);
  return from_values(v, {2, 3, 3}, kLong);
}

// The case's output and, for sort and topk, its indices.
std::pair<Tensor, Tensor> case_of(const std::string& name, const Tensor& x) {
  if (name == "sort_d1") return sort(x, 1);
  if (name == "sort_last_desc") return sort(x, -1, true);
  if (name == "topk2_d2") return topk(x, 2, 2);
  if (name == "topk2_d1_smallest") return topk(x, 2, 1, false);
  if (name == "cumsum_d1") return {cumsum(x, 1), Tensor()};
  if (name == "gather_d2") return {gather(x, 2, index()), Tensor()};
  if (name == "scatter_add_src") return {scatter_add(zeros({2, 3, 4}, kDouble), 2, index(), x.narrow(2, 0, 3)), Tensor()};
  throw Error("unknown case " + name);
}

TEST(AlongDim, ValuesIndicesAndGradientsArePyTorchs) {
  for (const Golden& c : kGolden) {
    SCOPED_TRACE(c.name);
    Tensor x = sine_input().requires_grad_(true);
    auto [y, idx] = case_of(c.name, x);
    ASSERT_EQ(y.sizes(), IntArrayRef(c.shape));
    EXPECT_TRUE(testing::all_close(y, from_values(c.value, c.shape), 1e-12, 1e-12));
    if (!c.indices.empty()) EXPECT_TRUE(testing::all_close(idx, from_values(c.indices, c.shape, kLong), 0, 0));
    Tensor w = (arange(0, 24, 1, kDouble) * (2.0 / 23) - 1.0).narrow(0, 0, y.numel()).reshape(y.sizes());
    (y * w).sum().backward();
    EXPECT_TRUE(testing::all_close(x.grad(), from_values(c.grad, {2, 3, 4}), 1e-12, 1e-12));
  }
}

TEST(AlongDim, Gradchecks) {
  const Tensor x = sine_input().requires_grad_(true);
  for (const Golden& c : kGolden)
    EXPECT_TRUE(testing::gradcheck([&](const V& v) { return case_of(c.name, v[0]).first; }, {x})) << c.name;
  const Tensor self = randn({2, 3, 4}, kDouble).requires_grad_(true), src = randn({2, 3, 3}, kDouble).requires_grad_(true);
  EXPECT_TRUE(testing::gradcheck([](const V& v) { return scatter_add(v[0], 2, index(), v[1]); }, {self, src}));
}

TEST(AlongDim, TiesNaNsAndLayoutsArePyTorchs) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto [v, i] = sort(from_values({3, 1, nan, 1, 2}, {5}, kFloat));
  EXPECT_TRUE(testing::all_close(i, from_values({1, 3, 4, 0, 2}, {5}, kLong), 0, 0));  // stable; NaN last
  auto [vd, id] = sort(from_values({3, 1, nan, 1, 2}, {5}, kFloat), 0, true);
  EXPECT_TRUE(testing::all_close(id, from_values({2, 0, 4, 1, 3}, {5}, kLong), 0, 0));  // NaN first
  EXPECT_TRUE(testing::all_close(topk(from_values({1, 3, 3, 2}, {4}), 2).second, from_values({1, 2}, {2}, kLong), 0, 0));
  EXPECT_TRUE(testing::all_close(topk(from_values({1, nan, 3, 2}, {4}), 2).second, from_values({1, 2}, {2}, kLong), 0, 0));
  // PyTorch 1.13's layouts: sort keeps channels-last, the others are contiguous.
  Tensor cl = randn({2, 3, 4, 5}).contiguous(MemoryFormat::ChannelsLast);
  EXPECT_EQ(sort(cl, 1).first.strides(), IntArrayRef({60, 1, 15, 3}));
  EXPECT_EQ(sort(cl, 1).second.strides(), IntArrayRef({60, 1, 15, 3}));
  EXPECT_EQ(topk(cl, 2, 1).first.strides(), IntArrayRef({40, 20, 5, 1}));
  EXPECT_EQ(cumsum(cl, 1).strides(), IntArrayRef({60, 20, 5, 1}));
  EXPECT_TRUE(testing::all_close(sort(cl, 1).first, sort(cl.contiguous(), 1).first, 0, 0));
  EXPECT_EQ(cumsum(ones({3}, kInt), 0).dtype(), kLong);
  EXPECT_EQ(cumsum(ones({4}, kBFloat16), 0).select(0, 3).item<float>(), 4.0f);
  // float32 sums accumulate in float64, as PyTorch's CPU cumsum: 1e8 + 1 + ... stays exact per step.
  Tensor big = from_values({1e8, 1, 1, 1, 1, 1, 1, 1}, {8}, kFloat);
  EXPECT_EQ(cumsum(big, 0).select(0, 7).item<float>(), static_cast<float>(1e8 + 7));
}

TEST(AlongDim, BadArgumentsAreNamedErrors) {
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const Tensor x = sine_input();
  EXPECT_NE(message([&] { topk(x, 5, 2); }).find("k = 5 is out of range"), std::string::npos);
  EXPECT_NE(message([&] { gather(x, 2, index().to(kInt)); }).find("index must be int64"), std::string::npos);
  EXPECT_NE(message([&] { gather(x, 2, from_values({4}, {1, 1, 1}, kLong)); }).find("index 4 is out of range"), std::string::npos);
  EXPECT_NE(message([&] { gather(x, 2, zeros({3, 3, 3}, kLong)); }).find("larger than"), std::string::npos);
  EXPECT_NE(message([&] { scatter_add(x, 2, index(), x.to(kFloat)); }).find("self is float64"), std::string::npos);
  EXPECT_NE(message([&] { topk(ones({3}, kBool), 1); }).find("not defined for bool"), std::string::npos);
  EXPECT_EQ(topk(full({}, 2.0), 0).first.item<float>(), 2.0f);  // PyTorch: the 0-d value, for k 0 or 1
  EXPECT_EQ(sort(empty({0, 3}), 0).first.sizes(), IntArrayRef({0, 3}));
  EXPECT_EQ(cumsum(empty({2, 0}), 1).sizes(), IntArrayRef({2, 0}));
}

}  // namespace
}  // namespace strider
