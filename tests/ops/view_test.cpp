// Views share storage and follow SPEC §7's stride rules.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "support/compare.h"

namespace strider {
namespace {

constexpr auto CL = MemoryFormat::ChannelsLast;

TEST(Views, ShareStorageAndSeeWrites) {
  Tensor x = zeros({3, 4});
  Tensor row = x.select(0, 1);
  row.fill_(7);
  EXPECT_EQ(x[1][2].item<float>(), 7.0f);
  Tensor col = x.narrow(1, 3, 1);
  col.fill_(1);
  EXPECT_EQ(x[2][3].item<float>(), 1.0f);
  EXPECT_EQ(x.t().strides(), IntArrayRef({1, 4}));
  EXPECT_EQ(x.view({2, 6}).storage(), x.storage());
}

TEST(Views, ChannelsLastReshapeAndFlatten) {
  Tensor x = rand({2, 3, 4, 5}).to(CL);
  Tensor r = x.reshape({2, 3, 20});
  EXPECT_EQ(r.strides(), IntArrayRef({60, 1, 3}));
  EXPECT_EQ(r.storage(), x.storage());
  EXPECT_THROW(x.view({2, 60}), Error);
  Tensor f = x.flatten(1);
  EXPECT_EQ(f.strides(), IntArrayRef({60, 1}));
  EXPECT_NE(f.storage(), x.storage());
  EXPECT_TRUE(equal(f, x.contiguous().view({2, 60})));
  EXPECT_TRUE(x.flatten(2, 2).is_same(x));
  EXPECT_EQ(x.permute({0, 2, 3, 1}).strides(), IntArrayRef({60, 15, 3, 1}));
  EXPECT_TRUE(x.permute({0, 2, 3, 1}).is_contiguous());
  EXPECT_EQ(x.permute({0, 1, 3, 2}).permute({0, 1, 3, 2}).strides(), x.strides());
  Tensor sliced = x.slice(1, 0, 2);
  EXPECT_FALSE(sliced.is_contiguous(CL));
  EXPECT_EQ(sliced.suggest_memory_format(), CL);
}

TEST(Views, UnsqueezeOfASelectedImageIsNotChannelsLast) {
  // PyTorch issue #68430: x[0].unsqueeze(0) of a CL batch is CL-contiguous but suggests NCHW.
  Tensor x = empty({1, 3, 32, 32}, CL);
  Tensor y = x[0].unsqueeze(0);
  EXPECT_EQ(y.strides(), IntArrayRef({3, 1, 96, 3}));
  EXPECT_TRUE(y.is_contiguous(CL));
  EXPECT_EQ(y.suggest_memory_format(), MemoryFormat::Contiguous);
}

TEST(Views, ExpandSqueezeAsStrided) {
  Tensor b = arange(3).reshape({3, 1});
  Tensor e = b.expand({2, 3, 4});
  EXPECT_EQ(e.strides(), IntArrayRef({0, 1, 0}));
  EXPECT_EQ(e[1][2][3].item<int64_t>(), 2);
  EXPECT_EQ(scalar_tensor(1.0).expand({2, 2}).strides(), IntArrayRef({0, 0}));
  EXPECT_EQ(b.expand({1, 3, 1}).strides(), IntArrayRef({3, 1, 1}));
  EXPECT_EQ(empty({2, 1, 3, 1}).squeeze().sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(empty({2, 1, 3}).squeeze(1).sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(empty({2, 1, 3}).squeeze(0).sizes(), IntArrayRef({2, 1, 3}));
  Tensor base = arange(10);
  Tensor w = base.as_strided({3, 3}, {1, 1}, 2);  // overlapping sliding window
  EXPECT_EQ(w[2][1].item<int64_t>(), 5);
  EXPECT_THROW(base.as_strided({4, 4}, {4, 1}), Error);
}

TEST(Views, SliceClampsLikePython) {
  Tensor x = arange(10);
  EXPECT_EQ(x.slice(0, -3).sizes(), IntArrayRef({3}));
  EXPECT_EQ(x.slice(0, 8, 100).sizes(), IntArrayRef({2}));
  EXPECT_EQ(x.slice(0, 5, 2).sizes(), IntArrayRef({0}));
  EXPECT_EQ(x.slice(0, 1, std::nullopt, 3).sizes(), IntArrayRef({3}));
  EXPECT_EQ(x.slice(0, 1, std::nullopt, 3)[2].item<int64_t>(), 7);
}

TEST(Views, BadArgumentsThrowNamedErrors) {
  Tensor x = rand({2, 3, 4});
  auto expect_error = [](auto f, const std::string& needle) {
    try {
      f();
      FAIL() << "expected an error containing " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([&] { x.permute({0, 1}); }, "[permute]");
  expect_error([&] { x.permute({0, 1, 1}); }, "repeated dim");
  expect_error([&] { x.select(1, 3); }, "out of bounds");
  expect_error([&] { x.select(3, 0); }, "dimension out of range");
  expect_error([&] { x.narrow(2, 2, 3); }, "[narrow]");
  expect_error([&] { x.view({5, 5}); }, "invalid for input of size 24");
  expect_error([&] { x.view({-1, -1}); }, "only one dimension");
  expect_error([&] { x.expand({2, 5, 4}); }, "[expand]");
  expect_error([&] { x.slice(0, 0, 2, 0); }, "step must be positive");
  expect_error([&] { x.unsqueeze(5); }, "dimension out of range");
  expect_error([&] { x.t(); }, "[t]");
  expect_error([&] { x.item(); }, "cannot be converted to Scalar");
}

TEST(Views, ReshapeInfersMinusOne) {
  Tensor x = arange(24);
  EXPECT_EQ(x.reshape({2, -1, 4}).sizes(), IntArrayRef({2, 3, 4}));
  EXPECT_EQ(x.view({-1}).sizes(), IntArrayRef({24}));
}

}  // namespace
}  // namespace strider
