#pragma once
// Image transforms on one image [C, H, W] (or [H, W]; Normalize needs the channel dim), as
// torchvision.transforms does on tensors. Each is a Transform (transform.h): call it with a
// SampleContext; the deterministic ones ignore it. Outputs are new contiguous tensors.
#include <cstdint>
#include <vector>

#include "strider/data/transform.h"

namespace strider::data {

// (x - mean[c]) / std[c] per channel, in x's floating dtype: torchvision's Normalize exactly
// (float32 subtraction then division). Throws strider::Error for an integer image (convert with
// ToFloat first), a channel count that is not mean's size (1 broadcasts), or a zero std.
struct Normalize {
  std::vector<double> mean, std;
  Tensor operator()(const Tensor& x, const SampleContext& = {}) const;
};

// uint8 -> float32 divided by 255 (torchvision's ConvertImageDtype(torch.float)); a floating
// image is returned converted to float32 unscaled. Other dtypes are a strider::Error.
struct ToFloat {
  Tensor operator()(const Tensor& x, const SampleContext& = {}) const;
};
using ConvertImageDtype = ToFloat;

enum class PaddingMode { Constant, Zeros };

// torchvision's RandomCrop(size, padding, fill, padding_mode='constant'): pads each side by
// `padding` (left, top, right, bottom) with `fill` (Zeros: 0), then cuts a [height, width]
// window at a random offset (uniform over all offsets, draws 0 and 1 of the sample's stream).
// Throws strider::Error when the padded image is smaller than the crop.
struct RandomCrop {
  int64_t height, width;
  int64_t pad_left = 0, pad_top = 0, pad_right = 0, pad_bottom = 0;
  double fill = 0;
  PaddingMode padding_mode = PaddingMode::Constant;
  // The common case: a square crop with the same padding on every side.
  static RandomCrop square(int64_t size, int64_t padding = 0, double fill = 0);
  Tensor operator()(const Tensor& x, const SampleContext& ctx) const;
};

// Flips the last dimension with probability p (draw 0 of the sample's stream).
struct RandomHorizontalFlip {
  double p = 0.5;
  Tensor operator()(const Tensor& x, const SampleContext& ctx) const;
};

// Bilinear resize to [height, width] without antialiasing, half-pixel centers
// (align_corners=False): torchvision's F.resize(x, [h, w], antialias=False) on a tensor. A uint8
// image is computed in float32 and rounded half to even, as torchvision does; float32 and
// float64 stay in their dtype. The sampling positions and weights are PyTorch 1.13's exactly;
// the blends may round differently from its vectorized kernel, so float32 results agree within
// a few ulps and a uint8 result can differ by 1 where the float value sits on a .5 boundary
// (tests/data/golden_test.cpp bounds both). Throws strider::Error for other dtypes or sizes <= 0.
struct Resize {
  int64_t height, width;
  Tensor operator()(const Tensor& x, const SampleContext& = {}) const;
};

// Channels-last memory: a 4-d batch [N, C, H, W] gets MemoryFormat::ChannelsLast strides; a
// 3-d image [C, H, W] gets the same pattern (strides {1, W * C, C}). Values are unchanged.
struct ToChannelsLast {
  Tensor operator()(const Tensor& x, const SampleContext& = {}) const;
};

}  // namespace strider::data
