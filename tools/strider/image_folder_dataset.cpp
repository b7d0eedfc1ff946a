#include "image_folder_dataset.h"

#include <algorithm>
#include <numeric>

#include <strider/data/sampler.h>
#include <strider/strider.h>

namespace strider::tools {

ImageFolderSubset::ImageFolderSubset(std::shared_ptr<const io::ImageFolder> folder, std::vector<int64_t> indices)
    : folder_(std::move(folder)), indices_(std::move(indices)) {}

data::Sample ImageFolderSubset::get(int64_t index) const {
  STRIDER_CHECK(index >= 0 && index < size(), "ImageFolderSubset", "sample ", index, " is outside the ", size(),
                " samples");
  const int64_t i = indices_[static_cast<size_t>(index)];
  return {{"image", folder_->image(i)}, {"label", scalar_tensor(folder_->label(i), kLong)}};
}

std::vector<int64_t> all_indices(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{0});
  return v;
}

HeldOutSplit hold_out(int64_t n, double fraction, uint64_t seed) {
  STRIDER_CHECK(n >= 2, "train", "an image folder of ", n,
                " image(s) cannot be split into training and validation; add images or pass --val-image-folder");
  const int64_t held = std::clamp<int64_t>(static_cast<int64_t>(static_cast<double>(n) * fraction), 1, n - 1);
  std::vector<int64_t> order = data::seeded_permutation(n, seed, "held-out images");
  HeldOutSplit split{{order.begin() + held, order.end()}, {order.begin(), order.begin() + held}};
  std::sort(split.train.begin(), split.train.end());
  std::sort(split.held_out.begin(), split.held_out.end());
  return split;
}

}  // namespace strider::tools
