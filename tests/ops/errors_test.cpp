// Bad input gets a strider::Error that names the op, the values involved and a fix.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "support/compare.h"

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>

namespace strider {
namespace {

// Expects f() to throw strider::Error whose message contains every needle.
void expect_error(const std::function<void()>& f, std::initializer_list<std::string> needles) {
  try {
    f();
  } catch (const Error& e) {
    std::string m = e.what();
    for (const auto& n : needles) EXPECT_NE(m.find(n), std::string::npos) << "missing '" << n << "' in: " << m;
    return;
  }
  ADD_FAILURE() << "expected strider::Error";
}

TEST(Errors, ShapeMismatch) {
  expect_error([] { rand({2, 3}) * rand({3, 2}); }, {"[mul]", "[2, 3]", "[3, 2]"});
  expect_error([] { cat({rand({2, 3}), rand({2, 4})}, 0); }, {"[cat]", "[2, 3]", "[2, 4]"});
  expect_error([] { cat({rand({2, 3}), rand({2})}, 0); }, {"[cat]", "same number of dimensions"});
  expect_error([] { stack({rand({2, 3}), rand({3, 2})}); }, {"[stack]", "[2, 3]", "[3, 2]"});
  expect_error([] { rand({2, 3}).view({4}); }, {"[view]", "[4]", "size 6"});
  expect_error([] { Tensor a = rand({2, 3}); a.copy_(rand({4})); }, {"[expand]"});
  expect_error([] { masked_fill(rand({2, 3}), tensor(std::vector<double>{1, 0}, kBool), 0); },
               {"[masked_fill]"});
}

TEST(Errors, BadDims) {
  expect_error([] { sum(rand({2, 3}), {2}); }, {"[sum]", "dimension out of range"});
  expect_error([] { softmax(rand({2, 3}), -3); }, {"[softmax]", "dimension out of range"});
  expect_error([] { rand({2, 3}).transpose(0, 2); }, {"[transpose]", "[-2, 1]"});
  expect_error([] { rand({2, 3}).flatten(1, 0); }, {"[flatten]", "start_dim"});
  expect_error([] { cat({}, 0); }, {"[cat]", "non-empty"});
}

TEST(Errors, MemoryFormatForRank) {
  expect_error([] { empty({2, 3, 4}, MemoryFormat::ChannelsLast); },
               {"[empty]", "required rank 4 tensor to use channels_last format", "rank 3"});
  expect_error([] { rand({2, 3, 4, 5}).to(MemoryFormat::ChannelsLast3d); },
               {"[to]", "required rank 5 tensor to use channels_last_3d format", "rank 4"});
  expect_error([] { rand({2, 3, 4, 5}).transpose(0, 1).contiguous(MemoryFormat::Preserve); },
               {"[contiguous]", "preserve memory format is unsupported"});
  expect_error([] { Tensor t = empty({0}); t.resize_({2}, MemoryFormat::Preserve); }, {"[resize_]"});
  expect_error([] { memory_format_from_string("nhwc"); }, {"unknown memory format", "channels_last"});
}

TEST(Errors, OutOfRange) {
  expect_error([] { arange(5).select(0, 5); }, {"[select]", "index 5", "size 5"});
  expect_error([] { arange(5).narrow(0, 3, 3); }, {"[narrow]"});
  expect_error([] { arange(5).as_strided({3}, {2}, 2); }, {"[as_strided]", "storage"});
  expect_error([] { rand({2}).size(1); }, {"[size]", "dimension out of range"});
}

// PyTorch 1.13 refuses these writes (the result would depend on the kernel's visiting order);
// they silently gave running sums and half-transposed matrices.
TEST(Errors, WritesIntoOverlappingMemory) {
  expect_error([] { add_(zeros({3, 1}).expand({3, 4}), ones({3, 4})); },
               {"[add]", "more than one element of the written-to tensor", "clone()"});
  expect_error([] { relu_(zeros({4}).expand({3, 4})); }, {"[relu]", "more than one element"});
  expect_error([] { Tensor b = arange(0, 6, 1, kFloat); add_(b.slice(0, 1, 6), b.slice(0, 0, 5)); },
               {"[add]", "some elements of the input", "clone() the input first"});
  expect_error([] { Tensor a = arange(0, 9, 1, kFloat).view({3, 3}); a.copy_(a.t()); }, {"[copy_]", "some elements"});
  expect_error([] { zeros({3, 1}).expand({3, 4}).copy_(ones({3, 4})); }, {"[copy_]", "more than one element"});
  expect_error([] { Tensor b = arange(0, 6, 1, kFloat); add_out(b.slice(0, 1, 6), b.slice(0, 0, 5), ones({5})); },
               {"[add_out]", "some elements"});
  // Allowed, as in PyTorch: the same elements in the same order, a disjoint slice, a broadcast
  // input, filling an expanded tensor.
  Tensor a = arange(0, 6, 1, kFloat);
  add_(a, a);
  add_(a.slice(0, 0, 3), a.slice(0, 3, 6));
  a.copy_(a.view({6}));
  add_(a.view({2, 3}), ones({1, 3}).expand({2, 3}));
  zeros({3, 1}).expand({3, 4}).fill_(2);
  EXPECT_EQ(testing::values(a), (std::vector<double>{7, 11, 15, 7, 9, 11}));
}

// c10::checked_convert's rule, as PyTorch's full, fill_ and masked_fill apply it: 300 wrapped to 44.
TEST(Errors, ScalarsThatDoNotFitTheDtype) {
  expect_error([] { full({2}, 300, kByte); }, {"[full]", "300", "uint8", "without overflow"});
  expect_error([] { zeros({2}, kByte).fill_(300); }, {"[fill_]", "without overflow"});
  expect_error([] { full({2}, -1.0, kByte); }, {"[full]", "without overflow"});
  expect_error([] { full({2}, -256, kByte); }, {"[full]"});
  expect_error([] { full({2}, 70000, kHalf); }, {"[full]", "float16"});
  expect_error([] { full({2}, 65519.0, kHalf); }, {"[full]"});
  expect_error([] { full({2}, int64_t{1} << 31, kInt); }, {"[full]", "int32"});
  expect_error([] { full({2}, 1e39, kFloat); }, {"[full]"});
  expect_error([] { full({2}, std::nan(""), kLong); }, {"[full]"});
  expect_error([] { masked_fill(zeros({2}, kInt), tensor({true, false}), 1e20); }, {"[masked_fill]"});
  expect_error([] { masked_fill(zeros({2}, kHalf), tensor({true, false}), 1e6); }, {"[masked_fill]"});
  EXPECT_EQ(testing::values(full({2}, -1, kByte)), (std::vector<double>{255, 255}));  // two's complement, as c10
  EXPECT_TRUE(std::isinf(testing::values(full({1}, INFINITY, kHalf))[0]));
  EXPECT_TRUE(std::isnan(testing::values(full({1}, NAN, kBFloat16))[0]));
  EXPECT_EQ(testing::values(full({1}, 1e300, kDouble))[0], 1e300);
}

TEST(Errors, IncompatibleDtype) {
  expect_error([] { rand({2}).data_ptr<double>(); }, {"[data_ptr]", "float64", "float32"});
  expect_error([] { where(rand({2}), rand({2}), rand({2})); }, {"[where]", "bool", "float32"});
  expect_error([] { Tensor i = arange(3); add_(i, rand({3})); }, {"[add]", "float32", "int64"});
  expect_error([] { mean(arange(3)); }, {"[mean]", "int64", ".to(kFloat)"});
  expect_error([] { softmax(arange(3), 0); }, {"[softmax]", "int64"});
  expect_error([] { sub(tensor(std::vector<double>{1}, kBool), tensor(std::vector<double>{1}, kBool)); },
               {"[sub]", "bool"});
  expect_error([] { scalar_type_from_string("int8"); }, {"unknown dtype", "int8"});
}

TEST(Errors, FactoryArguments) {
  expect_error([] { empty({2, -3}); }, {"[empty]", "negative", "[2, -3]"});
  expect_error([] { arange(0, 10, -1); }, {"[arange]", "step"});
  expect_error([] { from_blob(nullptr, {2}, kFloat); }, {"[from_blob]", "null"});
  expect_error([] { empty_strided({2, 3}, {1}); }, {"[empty_strided]"});
}

}  // namespace
}  // namespace strider

namespace strider {
namespace {

// apply_environment_switches() is what the tools call first and what a user's own program calls
// to honour STRIDER_CHECK_MEMORY_FORMAT, STRIDER_VERBOSE and STRIDER_AUTOTUNE.
TEST(EnvSwitches, AppliedOnRequestAndMisspeltValuesNamed) {
  struct Restore {
    ~Restore() {
      unsetenv("STRIDER_CHECK_MEMORY_FORMAT");
      unsetenv("STRIDER_VERBOSE");
      unsetenv("STRIDER_AUTOTUNE");
      set_memory_format_check(false);
      set_kernel_verbose(false);
      set_kernel_autotune(false);
    }
  } restore;
  setenv("STRIDER_CHECK_MEMORY_FORMAT", "1", 1);
  setenv("STRIDER_AUTOTUNE", "0", 1);
  apply_environment_switches();
  EXPECT_TRUE(memory_format_check_enabled());
  EXPECT_FALSE(kernel_verbose());
  EXPECT_FALSE(kernel_autotune());
  setenv("STRIDER_VERBOSE", "yes", 1);  // not a switch: an error, and nothing changes
  try {
    apply_environment_switches();
    ADD_FAILURE() << "STRIDER_VERBOSE=yes was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("STRIDER_VERBOSE='yes' is not a switch"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(memory_format_check_enabled());
  EXPECT_FALSE(kernel_verbose());
}

}  // namespace
}  // namespace strider

namespace strider {
namespace {

// Brace lists as torch.tensor takes them: the element type picks the dtype.
TEST(Factory, TensorFromABraceList) {
  EXPECT_EQ(tensor({1.5, 2.5}).dtype(), kFloat);
  EXPECT_EQ(tensor({1.5, 2.5}).to_string(), "tensor([1.5000, 2.5000])");
  EXPECT_EQ(tensor({1, 2, 3}).dtype(), kLong);
  EXPECT_EQ(tensor({1, 2, 3}).to_string(), "tensor([1, 2, 3])");
  EXPECT_EQ(tensor({true, false}).dtype(), kBool);
  EXPECT_EQ(tensor({1.0, 2.0}, kDouble).dtype(), kDouble);
  EXPECT_EQ(tensor({int64_t{1} << 40}).item<int64_t>(), int64_t{1} << 40);
  EXPECT_EQ(tensor({uint64_t{7}}).item<int64_t>(), 7);
  EXPECT_THROW(tensor({uint64_t{1} << 63}), Error);  // would wrap to a negative int64
}

}  // namespace
}  // namespace strider
