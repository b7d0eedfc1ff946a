// strider::data against PyTorch 1.13 and torchvision 0.14 (tests/golden/generate_data.py wrote
// tests/golden/data.json): DistributedSampler's split and padding with shuffle off, Normalize and
// bilinear Resize.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data/data_test_util.h"

namespace strider::testing {
namespace {

using nlohmann::json;

const json& golden() {
  static const json g = [] {
    std::ifstream f(STRIDER_GOLDEN_DIR "/data.json");
    EXPECT_TRUE(f.good()) << "cannot open " STRIDER_GOLDEN_DIR "/data.json";
    return json::parse(f);
  }();
  return g;
}

Tensor tensor_of(const json& j) {
  const auto values = j.at("values").get<std::vector<double>>();
  const auto sizes = j.at("sizes").get<std::vector<int64_t>>();
  const ScalarType dtype = scalar_type_from_string(j.at("dtype").get<std::string>());
  return tensor(values, kDouble).to(dtype).reshape(DimVector(sizes.begin(), sizes.end()));
}

TEST(DistributedSamplerGolden, SplitAndPaddingMatchPyTorch_ShuffleOff) {
  int cases = 0;
  for (const json& c : golden().at("distributed_sampler")) {
    const auto size = c.at("size").get<int64_t>();
    const auto replicas = c.at("num_replicas").get<int64_t>();
    const bool drop_last = c.at("drop_last").get<bool>();
    for (int64_t rank = 0; rank < replicas; ++rank) {
      data::DistributedSampler s(size, {.num_replicas = replicas, .rank = rank, .shuffle = false, .drop_last = drop_last});
      s.set_epoch(3);  // the epoch only moves a shuffled order
      EXPECT_EQ(s.indices(), c.at("ranks").at(rank).get<std::vector<int64_t>>())
          << "size " << size << " replicas " << replicas << " rank " << rank << " drop_last " << drop_last;
      EXPECT_EQ(s.num_samples(), static_cast<int64_t>(c.at("ranks").at(rank).size()));
    }
    ++cases;
  }
  EXPECT_GE(cases, 30);
}

TEST(NormalizeGolden, MatchesTorchvisionExactly) {
  for (const json& c : golden().at("normalize")) {
    Tensor x = tensor_of(c.at("input"));
    Tensor y = data::Normalize{c.at("mean").get<std::vector<double>>(), c.at("std").get<std::vector<double>>()}(x);
    EXPECT_TRUE(same_tensor(y, tensor_of(c.at("output")))) << x.sizes();
  }
}

// Positions and weights are PyTorch's exactly; the blends may round differently (image_transforms.h):
// float32 within a few ulps, and uint8 off by 1 only where the float value is at a .5 boundary.
TEST(ResizeGolden, BilinearMatchesTorchvision_Uint8AndFloat) {
  int64_t off_by_one = 0, total = 0;
  for (const json& c : golden().at("resize")) {
    Tensor x = tensor_of(c.at("input"));
    Tensor expected = tensor_of(c.at("output"));
    Tensor y = data::Resize{c.at("height").get<int64_t>(), c.at("width").get<int64_t>()}(x);
    ASSERT_EQ(y.sizes(), expected.sizes());
    ASSERT_EQ(y.dtype(), expected.dtype());
    Tensor a = y.to(kDouble).contiguous(), b = expected.to(kDouble).contiguous();
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double got = a.data_ptr<double>()[i], want = b.data_ptr<double>()[i];
      const double tolerance = x.dtype() == kByte ? 1.0 : 2.4e-7 * std::max(1.0, std::abs(want));  // 2 ulps
      ASSERT_NEAR(got, want, tolerance) << "element " << i << " of " << x.sizes() << " -> " << y.sizes() << " " << x.dtype();
      off_by_one += got != want && x.dtype() == kByte;
    }
    total += x.dtype() == kByte ? a.numel() : 0;
  }
  // None of these cases sits on a boundary where the blends' rounding decides.
  EXPECT_EQ(off_by_one, 0) << off_by_one << " of " << total << " uint8 values differ by 1";
}

}  // namespace
}  // namespace strider::testing
