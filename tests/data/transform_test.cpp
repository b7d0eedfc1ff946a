// Per-sample transforms: seeded per (seed, epoch, index), crops, flips, layouts, dtypes.
#include <cmath>

#include "data/data_test_util.h"

namespace strider::testing {
namespace {

using data::SampleContext;

Tensor image_3x4x5() { return arange(0, 60, 1, kLong).reshape({3, 4, 5}).to(kByte); }

TEST(TransformTest, RandomnessIsAFunctionOfSeedEpochAndIndex) {
  const SampleContext a{1, 0, 7, "s"}, same{1, 0, 7, "s"};
  EXPECT_EQ(a.uniform(0), same.uniform(0));
  EXPECT_NE(a.uniform(0), a.uniform(1));
  EXPECT_NE(a.uniform(0), (SampleContext{2, 0, 7, "s"}).uniform(0));
  EXPECT_NE(a.uniform(0), (SampleContext{1, 1, 7, "s"}).uniform(0));
  EXPECT_NE(a.uniform(0), (SampleContext{1, 0, 8, "s"}).uniform(0));
  EXPECT_NE(a.uniform(0), a.substream("t").uniform(0));
}

TEST(TransformTest, RandomCropWithPaddingCutsAWindowOfThePaddedImage) {
  const Tensor x = image_3x4x5();
  data::RandomCrop crop = data::RandomCrop::square(4, 2, 9);
  int saw_fill = 0;
  for (int64_t i = 0; i < 40; ++i) {
    const SampleContext ctx{3, 0, i, ""};
    Tensor y = crop(x, ctx);
    ASSERT_EQ(y.sizes(), IntArrayRef({3, 4, 4}));
    EXPECT_TRUE(same_tensor(y, crop(x, ctx)));  // reproducible
    // Every value is the fill or the image's value at the offset the draws chose.
    const int64_t top = static_cast<int64_t>(ctx.uniform(0) * 5), left = static_cast<int64_t>(ctx.uniform(1) * 6);
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t r = 0; r < 4; ++r)
        for (int64_t q = 0; q < 4; ++q) {
          const int64_t sy = r + top - 2, sx = q + left - 2;
          const bool inside = sy >= 0 && sy < 4 && sx >= 0 && sx < 5;
          const int64_t expected = inside ? c * 20 + sy * 5 + sx : 9;
          saw_fill += !inside;
          ASSERT_EQ(y.data_ptr<uint8_t>()[(c * 4 + r) * 4 + q], expected);
        }
  }
  EXPECT_GT(saw_fill, 0);
  EXPECT_THROW(data::RandomCrop::square(9)(x, {}), Error);
  data::RandomCrop zeros{4, 4, 1, 1, 1, 1, 9, data::PaddingMode::Zeros};
  EXPECT_EQ(zeros(x, {}).sizes(), IntArrayRef({3, 4, 4}));
  // A fill the uint8 image cannot hold is refused (torchvision: "cannot be converted to type
  // uint8_t without overflow"); it wrapped to 44 for 300.
  for (double bad : {300.0, -1.0, 1e10, std::nan("")})
    EXPECT_THROW(data::RandomCrop::square(4, 2, bad)(x, {}), Error) << bad;
  EXPECT_NO_THROW(data::RandomCrop::square(4, 2, 255)(x, {}));
  EXPECT_NO_THROW(data::RandomCrop::square(4, 2, 300)(x.to(kFloat), {}));
}

TEST(TransformTest, HorizontalFlipReversesTheLastDimension) {
  const Tensor x = image_3x4x5();
  Tensor always = data::RandomHorizontalFlip{1.0}(x, {});
  EXPECT_EQ(always.data_ptr<uint8_t>()[0], 4);
  EXPECT_EQ(always.data_ptr<uint8_t>()[4], 0);
  EXPECT_TRUE(same_tensor(data::RandomHorizontalFlip{0.0}(x, {}), x));
  int flipped = 0;
  for (int64_t i = 0; i < 100; ++i) flipped += !same_tensor(data::RandomHorizontalFlip{0.5}(x, {0, 0, i, ""}), x);
  EXPECT_GT(flipped, 20);
  EXPECT_LT(flipped, 80);
}

TEST(TransformTest, ToFloatDividesBy255AndToChannelsLastKeepsValues) {
  Tensor f = data::ToFloat{}(image_3x4x5());
  EXPECT_EQ(f.dtype(), kFloat);
  EXPECT_EQ(f.data_ptr<float>()[51], 51.0f / 255.0f);
  Tensor batch = stack({f, f});
  Tensor cl = data::ToChannelsLast{}(batch);
  EXPECT_TRUE(cl.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(same_tensor(cl, batch));
  Tensor image_cl = data::ToChannelsLast{}(f);
  EXPECT_EQ(image_cl.strides(), IntArrayRef({1, 15, 3}));
  EXPECT_TRUE(same_tensor(image_cl, f));
  // One channel: NCHW strides are channels-last dense too, but x.to(memory_format=
  // torch.channels_last) gives (784, 1, 28, 1) in PyTorch, and what follows takes its layout from them.
  EXPECT_EQ(data::ToChannelsLast{}(zeros({4, 1, 28, 28})).strides(), IntArrayRef({784, 1, 28, 1}));
  EXPECT_EQ(data::ToChannelsLast{}(zeros({1, 28, 28})).strides(), IntArrayRef({1, 28, 1}));
  EXPECT_THROW((data::Normalize{{0.5}, {0.5}}(image_3x4x5())), Error);  // integer image: ToFloat first
  EXPECT_THROW((data::Normalize{{0.5, 0.5}, {0.5, 0.5}}(f)), Error);  // 2 values, 3 channels
}

TEST(TransformTest, ComposeGivesEachStepItsOwnStream) {
  const Tensor x = image_3x4x5();
  data::Compose two({data::RandomHorizontalFlip{0.5}, data::RandomHorizontalFlip{0.5}});
  // Two flips of one stream would always cancel; with separate streams some samples flip once.
  int changed = 0;
  for (int64_t i = 0; i < 50; ++i) changed += !same_tensor(two(x, {0, 0, i, ""}), x);
  EXPECT_GT(changed, 0);
}

}  // namespace
}  // namespace strider::testing
