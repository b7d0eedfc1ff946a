#pragma once
// An image folder as torchvision's ImageFolder reads it: root/<class>/.../<file>.png|jpg|jpeg.
// Classes are the root's subdirectories sorted by name (byte order, as Python sorts UTF-8 names)
// and numbered from 0; each class's images are found recursively and listed sorted by
// (directory, file name), as torchvision's make_dataset walks them. Extensions match case-
// insensitively; other files are skipped. Symbolic links are followed; one that leads back to a
// directory it is inside of is an error (it would be walked forever).
#include <cstdint>
#include <string>
#include <vector>

#include "strider/core/tensor.h"

namespace strider::io {

struct ImageFolderSample {
  std::string path;
  int64_t label = 0;  // index into classes()
};

struct ImageFolderOptions {
  int64_t image_size = 0;  // > 0: resize_and_center_crop to image_size x image_size
  int64_t channels = 0;    // 1 or 3: convert_channels to it; 0: as decoded
};

class ImageFolder {
 public:
  // Lists the folder (no image is decoded). Errors name the path: a root that is not a
  // directory, a root without a class folder, a class folder without an image.
  explicit ImageFolder(const std::string& root, ImageFolderOptions options = {});

  const std::vector<std::string>& classes() const { return classes_; }
  const std::vector<ImageFolderSample>& samples() const { return samples_; }
  int64_t size() const { return static_cast<int64_t>(samples_.size()); }
  // Sample i decoded (read_image) and brought to the options' size and channels: uint8 [C, H, W].
  Tensor image(int64_t i) const;
  int64_t label(int64_t i) const;

 private:
  std::string root_;
  ImageFolderOptions options_;
  std::vector<std::string> classes_;
  std::vector<ImageFolderSample> samples_;
};

}  // namespace strider::io
