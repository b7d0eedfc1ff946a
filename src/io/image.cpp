#include "strider/io/image.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "io/image_decode.h"
#include "io/mapped_file.h"
#include "strider/ops/factory.h"

namespace strider::io {
namespace {

void check_image(const Tensor& image, const char* op) {
  STRIDER_CHECK(image.defined() && image.dtype() == kByte && image.dim() == 3 && image.sizes()[0] >= 1, op,
                "expected a uint8 [C, H, W] image, got ", image.defined() ? image.sizes() : IntArrayRef{},
                image.defined() ? " of " : "", image.defined() ? to_string(image.dtype()) : "an undefined tensor");
}

// Python's round(): half to even.
int64_t round_half_even(int64_t twice) { return twice / 2 + ((twice % 2) && ((twice / 2) % 2) ? 1 : 0); }

// The [C, out_h, out_w] window at (top, left) of `src` (contiguous uint8 [C, H, W]) resized
// bilinearly to height x width: only the window's pixels are computed, so cropping a resized
// image costs the crop, not the whole resized image (a 1x60000 strip resized to a side of 300
// would be 300 x 18,000,000). Each pixel is what the whole resize gives it.
Tensor resize_window(const Tensor& src, int64_t height, int64_t width, int64_t top, int64_t left, int64_t out_h,
                     int64_t out_w, const char* op) {
  const int64_t C = src.sizes()[0], H = src.sizes()[1], W = src.sizes()[2];
  STRIDER_CHECK(H > 0 && W > 0, op, "cannot resize an empty image ", src.sizes());
  Tensor out = empty({C, out_h, out_w}, kByte);
  const uint8_t* s = src.data_ptr<uint8_t>();
  uint8_t* o = out.data_ptr<uint8_t>();
  // Half-pixel centers, source coordinates clamped at 0, as PyTorch's align_corners=False.
  auto axis = [](int64_t out_size, int64_t in_size, int64_t i, int64_t& i0, int64_t& i1, float& t) {
    const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
    const float x = std::max((static_cast<float>(i) + 0.5f) * scale - 0.5f, 0.0f);
    i0 = std::min(static_cast<int64_t>(x), in_size - 1);
    i1 = std::min(i0 + 1, in_size - 1);
    t = x - static_cast<float>(i0);
  };
  for (int64_t y = 0; y < out_h; ++y) {
    int64_t y0, y1;
    float ty;
    axis(height, H, top + y, y0, y1, ty);
    for (int64_t x = 0; x < out_w; ++x) {
      int64_t x0, x1;
      float tx;
      axis(width, W, left + x, x0, x1, tx);
      for (int64_t c = 0; c < C; ++c) {
        const uint8_t* p = s + c * H * W;
        const float top_row = (1 - tx) * p[y0 * W + x0] + tx * p[y0 * W + x1];
        const float bottom_row = (1 - tx) * p[y1 * W + x0] + tx * p[y1 * W + x1];
        const float v = (1 - ty) * top_row + ty * bottom_row;
        o[(c * out_h + y) * out_w + x] = static_cast<uint8_t>(std::clamp(std::nearbyint(v), 0.0f, 255.0f));
      }
    }
  }
  return out;
}

}  // namespace

Tensor read_image(const std::string& path) {
  std::shared_ptr<const MappedFile> file = MappedFile::open(path, "read_image", MappedFile::Access::ReadOnly);
  const unsigned char* d = file->data();
  const uint64_t n = file->size();
  RawImage raw;
  int rc = 1;
  if (n >= 8 && d[0] == 0x89 && d[1] == 'P' && d[2] == 'N' && d[3] == 'G') rc = decode_png_raw(d, n, kMaxImageBytes, &raw);
  else if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8) rc = decode_jpeg_raw(d, n, kMaxImageBytes, &raw);
  else STRIDER_CHECK(false, "read_image", path, " is neither a PNG nor a JPEG file (", n, " bytes; unknown signature)");
  STRIDER_CHECK(rc == 0, "read_image", path, ": corrupt or truncated image: ", raw.message);
  const int64_t h = raw.height, w = raw.width, c = raw.channels;
  Tensor hwc = from_blob(raw.pixels, {h, w, c}, kByte, [](void* p) { std::free(p); });
  return c == 1 ? hwc.reshape({1, h, w}) : hwc.permute({2, 0, 1}).contiguous();
}

Tensor resize_image(const Tensor& image, int64_t height, int64_t width) {
  check_image(image, "resize_image");
  STRIDER_CHECK(height > 0 && width > 0, "resize_image", "the target size must be positive, got ", height, "x", width);
  return resize_window(image.contiguous(), height, width, 0, 0, height, width, "resize_image");
}

Tensor center_crop(const Tensor& image, int64_t height, int64_t width) {
  check_image(image, "center_crop");
  const int64_t H = image.sizes()[1], W = image.sizes()[2];
  STRIDER_CHECK(height > 0 && width > 0 && height <= H && width <= W, "center_crop", "cannot crop ", height, "x", width,
                " from an image of ", H, "x", W, "; resize it first (resize_and_center_crop)");
  const int64_t top = round_half_even(H - height), left = round_half_even(W - width);
  return image.narrow(1, top, height).narrow(2, left, width).contiguous();
}

Tensor resize_and_center_crop(const Tensor& image, int64_t size) {
  check_image(image, "resize_and_center_crop");
  STRIDER_CHECK(size > 0, "resize_and_center_crop", "size must be positive, got ", size);
  const int64_t H = image.sizes()[1], W = image.sizes()[2];
  STRIDER_CHECK(H > 0 && W > 0, "resize_and_center_crop", "cannot resize an empty image ", image.sizes());
  const int64_t shorter = std::min(H, W), longer = std::max(H, W);
  const double scaled_exact = static_cast<double>(size) * static_cast<double>(longer) / static_cast<double>(shorter);
  STRIDER_CHECK(scaled_exact < 0x1p62, "resize_and_center_crop", "resizing a ", H, "x", W, " image to a shorter side of ",
                size, " makes the longer side ", scaled_exact, " pixels, beyond 64-bit sizes");
  const int64_t scaled = static_cast<int64_t>(scaled_exact);
  const int64_t h = H <= W ? size : scaled, w = H <= W ? scaled : size;
  if (h == H && w == W) return center_crop(image, size, size);
  // The crop of the resized image, computed alone: torchvision's offsets, half to even.
  return resize_window(image.contiguous(), h, w, round_half_even(h - size), round_half_even(w - size), size, size,
                       "resize_and_center_crop");
}

Tensor convert_channels(const Tensor& image, int64_t channels) {
  check_image(image, "convert_channels");
  const int64_t C = image.sizes()[0];
  STRIDER_CHECK(channels == 1 || channels == 3, "convert_channels", "channels must be 1 or 3, got ", channels);
  STRIDER_CHECK(C == 1 || C == 3, "convert_channels", "the image has ", C, " channels; expected 1 or 3");
  if (C == channels) return image;
  if (channels == 3) return image.expand({3, image.sizes()[1], image.sizes()[2]}).contiguous();
  const Tensor src = image.contiguous();
  const int64_t hw = src.sizes()[1] * src.sizes()[2];
  Tensor out = empty({1, src.sizes()[1], src.sizes()[2]}, kByte);
  const uint8_t* s = src.data_ptr<uint8_t>();
  uint8_t* o = out.data_ptr<uint8_t>();
  for (int64_t i = 0; i < hw; ++i)  // ITU-R 601-2 luma in PIL's 16-bit fixed point, so the bits match PIL's
    o[i] = static_cast<uint8_t>((s[i] * 19595 + s[hw + i] * 38470 + s[2 * hw + i] * 7471 + 0x8000) >> 16);
  return out;
}

}  // namespace strider::io
