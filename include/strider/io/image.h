#pragma once
// PNG and JPEG images as uint8 [C, H, W] tensors, and the resize and crop that bring images of
// any size to one size.
//
// Decoding (libpng, libjpeg-turbo), chosen by the file's signature, not its extension:
//   - grayscale -> C = 1; RGB -> C = 3;
//   - PNG: palette -> RGB; gray of 1, 2 or 4 bits -> 8 bits; 16 bits -> 8 bits (scaled with
//     rounding, v * 255 / 65535); an alpha channel or tRNS transparency is dropped (the stored
//     colors are kept, as PIL's convert("RGB") does); interlaced images are read;
//   - JPEG: CMYK and YCCK are refused; any libjpeg warning (corrupt data, a truncated file
//     that libjpeg would pad with gray) is an error, and so are more than 500 progressive scans.
// A missing file, a file that is neither format, a corrupt or truncated image, or one whose
// pixels exceed kMaxImageBytes is a strider::Error naming the file and libpng's/libjpeg's reason.
#include <cstdint>
#include <string>

#include "strider/core/tensor.h"

namespace strider::io {

inline constexpr uint64_t kMaxImageBytes = uint64_t{1} << 28;  // 256 MiB of decoded pixels

Tensor read_image(const std::string& path);

// Bilinear resize of uint8 [C, H, W] to [C, height, width], PyTorch's interpolate(mode=
// "bilinear", align_corners=False, antialias=False) computed in float and rounded to nearest.
Tensor resize_image(const Tensor& image, int64_t height, int64_t width);

// The [C, height, width] center of `image` (offsets rounded as torchvision's CenterCrop rounds:
// half to even). A crop larger than the image is an Error.
Tensor center_crop(const Tensor& image, int64_t height, int64_t width);

// torchvision's Resize(size) then CenterCrop(size): the shorter side scaled to `size` (the
// longer to floor(size * long / short)), then the centered size x size square. Contiguous.
Tensor resize_and_center_crop(const Tensor& image, int64_t size);

// 1 -> 3 channels by repeating gray; 3 -> 1 by PIL's luma (R*299 + G*587 + B*114) / 1000.
Tensor convert_channels(const Tensor& image, int64_t channels);

}  // namespace strider::io
