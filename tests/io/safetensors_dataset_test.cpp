// A safetensors file as a dataset: fields sharing the sample dimension.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "io/reader_test_util.h"

namespace strider {
namespace {

using testing::error_of;

TEST(SafetensorsDataset, LoadsFieldsSharingTheFirstDimension) {
  const std::string p = testing::temp_path("ds.safetensors");
  io::save_safetensors(p, {{"images", zeros({5, 1, 2, 2}, kByte)}, {"labels", zeros({5}, kLong)}, {"w", zeros({3})}});
  io::SafetensorsDataset ds = io::load_safetensors_dataset(p, {"images", "labels"});
  EXPECT_EQ(ds.size, 5);
  EXPECT_EQ(ds.fields.size(), 2u);
  const std::string mismatch = error_of([&] { io::load_safetensors_dataset(p); });
  EXPECT_NE(mismatch.find(p), std::string::npos) << mismatch;
  EXPECT_NE(mismatch.find("field 'w' has 3 samples"), std::string::npos) << mismatch;
  EXPECT_NE(mismatch.find("field 'images' has 5"), std::string::npos) << mismatch;
  const std::string missing = error_of([&] { io::load_safetensors_dataset(p, {"label"}); });
  EXPECT_NE(missing.find("no field 'label'"), std::string::npos) << missing;
  EXPECT_NE(missing.find("'images', 'labels', 'w'"), std::string::npos) << missing;
  io::save_safetensors(p, {{"x", zeros({4})}, {"s", zeros({})}});
  EXPECT_NE(error_of([&] { io::load_safetensors_dataset(p); }).find("field 's' is 0-d"), std::string::npos);
  io::save_safetensors(p, {});
  EXPECT_NE(error_of([&] { io::load_safetensors_dataset(p); }).find("holds no tensors"), std::string::npos);
  std::remove(p.c_str());
}

}  // namespace
}  // namespace strider
