#pragma once
// Some of an image folder's samples as a data::Dataset: get() decodes one image (in the
// DataLoader's worker threads, so images are read as training needs them, not all up front).
#include <cstdint>
#include <memory>
#include <vector>

#include <strider/data/dataset.h>
#include <strider/io/image_folder.h>

namespace strider::tools {

class ImageFolderSubset final : public data::Dataset {
 public:
  // The folder's samples `indices` (in that order).
  ImageFolderSubset(std::shared_ptr<const io::ImageFolder> folder, std::vector<int64_t> indices);
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  // {"image": uint8 [C, S, S], "label": int64 []}
  data::Sample get(int64_t index) const override;

 private:
  std::shared_ptr<const io::ImageFolder> folder_;
  std::vector<int64_t> indices_;
};

// 0, 1, ..., n - 1.
std::vector<int64_t> all_indices(int64_t n);

// A seeded share of 0..n-1 held out for validation (at least one sample, and at least one left to
// train on): {train, held_out}, each in ascending order.
struct HeldOutSplit {
  std::vector<int64_t> train, held_out;
};
HeldOutSplit hold_out(int64_t n, double fraction, uint64_t seed);

}  // namespace strider::tools
