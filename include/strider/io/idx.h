#pragma once
// IDX files (the MNIST family's format), plain or gzip-compressed, and the Fashion-MNIST split
// as Debian's dataset-fashion-mnist installs it.
#include <string>

#include "strider/core/tensor.h"

namespace strider::io {

// Reads an IDX file into a tensor of its dtype and dimensions (uint8 images [N, H, W], uint8
// labels [N]). A missing, truncated or malformed file is a strider::Error naming the file.
Tensor read_idx(const std::string& path);

struct ImageDataset {
  Tensor images;  // uint8 [N, 1, H, W]
  Tensor labels;  // int64 [N]
  int64_t size() const { return labels.numel(); }
};

inline const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline constexpr int kFashionMnistClasses = 10;
inline constexpr int64_t kFashionMnistSide = 28;  // every image is 28x28

// split: "train" (60000 images) or "test" (10000). Checks that images and labels agree, that the
// images are 28x28 and that every label is a class (0..9).
ImageDataset load_fashion_mnist(const std::string& dir, const std::string& split);

}  // namespace strider::io
