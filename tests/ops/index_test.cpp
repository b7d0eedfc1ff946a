// Gathering and its adjoint: index_select's layout, index dtypes and shape checks, against PyTorch 1.13.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "strider/ops/index.h"
#include "support/compare.h"

namespace strider {
namespace {

using testing::values;
using Strides = std::vector<int64_t>;

Strides strides_of(const Tensor& t) { return Strides(t.strides().begin(), t.strides().end()); }

// PyTorch's index_select returns a contiguous tensor whatever the input's layout.
TEST(Index, SelectIsContiguousAndTakesInt32Indices) {
  const Tensor x = arange(0, 12, 1, kFloat).view({3, 4}).t();
  const Tensor r = index_select(x, 0, tensor(std::vector<int64_t>{3, 0}));
  EXPECT_EQ(strides_of(r), (Strides{3, 1}));
  EXPECT_EQ(values(r), (std::vector<double>{3, 7, 11, 0, 4, 8}));
  const Tensor c = arange(0, 24, 1, kFloat).view({2, 3, 2, 2}).contiguous(MemoryFormat::ChannelsLast);
  EXPECT_EQ(strides_of(index_select(c, 1, tensor(std::vector<int64_t>{2, 0}))), (Strides{8, 4, 2, 1}));
  const Tensor int32_index = tensor(std::vector<int64_t>{3, 0}).to(kInt);
  EXPECT_EQ(values(index_select(x, 0, int32_index)), values(r));
  EXPECT_EQ(values(nn::functional::embedding(int32_index, arange(0, 8, 1, kFloat).view({4, 2}))),
            (std::vector<double>{6, 7, 0, 1}));
  EXPECT_THROW(index_select(x, 0, tensor(std::vector<double>{1})), Error);
}

// PyTorch: "Number of indices (2) should be equal to source.size(dim): (3)"; the third row was dropped.
TEST(Index, AddIntoChecksTheSourceShape) {
  const Tensor index = tensor(std::vector<int64_t>{0, 2});
  EXPECT_EQ(values(ops::index_add_into({3, 2}, 0, index, arange(0, 4, 1, kFloat).view({2, 2}))),
            (std::vector<double>{0, 1, 0, 0, 2, 3}));
  EXPECT_THROW(ops::index_add_into({3, 2}, 0, index, arange(0, 6, 1, kFloat).view({3, 2})), Error);
  EXPECT_THROW(ops::index_add_into({3, 2}, 0, index, ones({2})), Error);
  EXPECT_THROW(ops::index_add_into({3, 2}, 0, index, ones({2, 3})), Error);
}

// bmm does not broadcast (matmul does): PyTorch refuses [1, 2, 3] @ [3, 3, 2].
TEST(Index, BmmAndMmDoNotBroadcast) {
  try {
    (void)bmm(ones({1, 2, 3}), ones({3, 3, 2}));
    ADD_FAILURE() << "bmm broadcast its batch";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[bmm]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(bmm(ones({2, 2, 3}), ones({2, 4, 2})), Error);
  EXPECT_THROW(mm(ones({2, 3}), ones({4, 2})), Error);
  EXPECT_EQ(matmul(ones({1, 2, 3}), ones({3, 3, 2})).sizes(), IntArrayRef({3, 2, 2}));
}

// PyTorch's masked_fill broadcasts self and the mask (the result takes the larger shape).
TEST(Index, MaskedFillBroadcastsBothOperands) {
  const Tensor r = masked_fill(zeros({2, 3}), tensor({true, false, true}).view({1, 1, 3}).expand({4, 1, 3}), 1.0);
  EXPECT_EQ(r.sizes(), IntArrayRef({4, 2, 3}));
  EXPECT_EQ(values(r.select(0, 3).select(0, 1)), (std::vector<double>{1, 0, 1}));
}

}  // namespace
}  // namespace strider
