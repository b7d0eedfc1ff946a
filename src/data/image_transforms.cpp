// Normalize, ToFloat, RandomCrop, RandomHorizontalFlip, ToChannelsLast (Resize: resize.cpp).
#include "strider/data/image_transforms.h"

#include <cstring>

#include "strider/core/dispatch.h"
#include "strider/core/error.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"

namespace strider::data {
namespace {

void check_image(const Tensor& x, int64_t min_dim, const char* op) {
  STRIDER_CHECK(x.defined(), op, "got an undefined tensor");
  STRIDER_CHECK(x.dim() >= min_dim, op, "expected an image with at least ", min_dim, " dims (",
                min_dim == 3 ? "[C, H, W]" : "[H, W]", "), got sizes ", x.sizes());
}

}  // namespace

Tensor Normalize::operator()(const Tensor& x, const SampleContext&) const {
  check_image(x, 3, "Normalize");
  const int64_t channels = x.size(-3);
  STRIDER_CHECK(!mean.empty() && mean.size() == std.size(), "Normalize", "mean has ", mean.size(), " values and std ",
                std.size(), "; give one of each per channel");
  STRIDER_CHECK(static_cast<int64_t>(mean.size()) == channels || mean.size() == 1, "Normalize", "the image has ",
                channels, " channels (sizes ", x.sizes(), ") but mean and std have ", mean.size(), " values");
  for (size_t c = 0; c < std.size(); ++c)
    STRIDER_CHECK(std[c] != 0, "Normalize", "std[", c, "] is 0; division by zero");
  STRIDER_CHECK(x.dtype() == kFloat || x.dtype() == kDouble, "Normalize", "expected a float32 or float64 image, got ",
                x.dtype(), "; convert it with ToFloat first");
  Tensor in = x.contiguous();
  Tensor out = empty(in.sizes(), in.dtype());
  const int64_t plane = x.size(-1) * x.size(-2);
  const int64_t planes = in.numel() / plane;
  dispatch_floating(in.dtype(), "Normalize", [&]<class T>() {
    const T* src = in.data_ptr<T>();
    T* dst = out.data_ptr<T>();
    for (int64_t p = 0; p < planes; ++p) {
      const size_t c = mean.size() == 1 ? 0 : static_cast<size_t>(p % channels);
      // torchvision makes mean and std tensors of the image's dtype, then sub_ and div_.
      const T m = static_cast<T>(mean[c]), s = static_cast<T>(std[c]);
      for (int64_t i = p * plane; i < (p + 1) * plane; ++i) dst[i] = (src[i] - m) / s;
    }
  });
  return out;
}

Tensor ToFloat::operator()(const Tensor& x, const SampleContext&) const {
  STRIDER_CHECK(x.defined(), "ToFloat", "got an undefined tensor");
  if (is_floating_point(x.dtype())) return x.to(kFloat).contiguous();
  STRIDER_CHECK(x.dtype() == kByte, "ToFloat", "expected a uint8 or floating image, got ", x.dtype(),
                "; for other integer images divide by their own maximum");
  Tensor in = x.contiguous();
  Tensor out = empty(in.sizes(), kFloat);
  const uint8_t* src = in.data_ptr<uint8_t>();
  float* dst = out.data_ptr<float>();
  for (int64_t i = 0; i < in.numel(); ++i) dst[i] = static_cast<float>(src[i]) / 255.0f;  // a division, as torchvision
  return out;
}

RandomCrop RandomCrop::square(int64_t size, int64_t padding, double fill) {
  return RandomCrop{size, size, padding, padding, padding, padding, fill, PaddingMode::Constant};
}

Tensor RandomCrop::operator()(const Tensor& x, const SampleContext& ctx) const {
  check_image(x, 2, "RandomCrop");
  STRIDER_CHECK(height > 0 && width > 0, "RandomCrop", "crop size must be positive, got ", height, "x", width);
  STRIDER_CHECK(pad_left >= 0 && pad_top >= 0 && pad_right >= 0 && pad_bottom >= 0, "RandomCrop",
                "padding must be >= 0, got left ", pad_left, " top ", pad_top, " right ", pad_right, " bottom ", pad_bottom);
  const int64_t h = x.size(-2), w = x.size(-1);
  const int64_t ph = h + pad_top + pad_bottom, pw = w + pad_left + pad_right;
  STRIDER_CHECK(ph >= height && pw >= width, "RandomCrop", "the padded image is ", ph, "x", pw,
                " (image ", h, "x", w, " plus padding) and smaller than the crop ", height, "x", width,
                "; pad more or crop less");
  // Offsets as torchvision draws them: top first, then left, each uniform over all positions.
  const auto top = std::min<int64_t>(ph - height, static_cast<int64_t>(ctx.uniform(0) * static_cast<double>(ph - height + 1)));
  const auto left = std::min<int64_t>(pw - width, static_cast<int64_t>(ctx.uniform(1) * static_cast<double>(pw - width + 1)));
  Tensor in = x.contiguous();
  std::vector<int64_t> sizes(in.sizes().begin(), in.sizes().end());
  sizes[sizes.size() - 2] = height;
  sizes[sizes.size() - 1] = width;
  Tensor out = strider::empty(sizes, in.dtype());
  const double value = padding_mode == PaddingMode::Zeros ? 0.0 : fill;
  ops::check_scalar_fits(value, in.dtype(), "RandomCrop");  // torchvision raises too
  Tensor fill_value = full({1}, value, in.dtype());
  const size_t es = in.element_size();
  const auto* src = static_cast<const char*>(in.data());
  auto* dst = static_cast<char*>(out.data());
  const int64_t planes = in.numel() / (h * w);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t y = 0; y < height; ++y)
      for (int64_t c = 0; c < width; ++c) {
        const int64_t sy = y + top - pad_top, sx = c + left - pad_left;
        const bool inside = sy >= 0 && sy < h && sx >= 0 && sx < w;
        const char* from = inside ? src + ((p * h + sy) * w + sx) * static_cast<int64_t>(es)
                                  : static_cast<const char*>(fill_value.data());
        std::memcpy(dst + ((p * height + y) * width + c) * static_cast<int64_t>(es), from, es);
      }
  return out;
}

Tensor RandomHorizontalFlip::operator()(const Tensor& x, const SampleContext& ctx) const {
  check_image(x, 1, "RandomHorizontalFlip");
  STRIDER_CHECK(p >= 0 && p <= 1, "RandomHorizontalFlip", "p must be in [0, 1], got ", p);
  if (!(ctx.uniform(0) < p)) return x.contiguous();
  Tensor in = x.contiguous();
  Tensor out = empty_like(in, MemoryFormat::Contiguous);
  const int64_t w = in.size(-1), rows = w == 0 ? 0 : in.numel() / w;
  const size_t es = in.element_size();
  const auto* src = static_cast<const char*>(in.data());
  auto* dst = static_cast<char*>(out.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < w; ++c)
      std::memcpy(dst + (r * w + c) * static_cast<int64_t>(es), src + (r * w + (w - 1 - c)) * static_cast<int64_t>(es), es);
  return out;
}

Tensor ToChannelsLast::operator()(const Tensor& x, const SampleContext&) const {
  STRIDER_CHECK(x.defined() && (x.dim() == 3 || x.dim() == 4), "ToChannelsLast",
                "expected an image [C, H, W] or a batch [N, C, H, W], got ",
                x.defined() ? x.sizes() : IntArrayRef());
  // x.to(memory_format=torch.channels_last), not contiguous(): with one channel an NCHW batch is
  // also channels-last dense, and contiguous() would keep its NCHW strides. An image goes as a
  // batch of one, so it too gets {1, W * C, C} whatever C is.
  if (x.dim() == 4) return x.to(MemoryFormat::ChannelsLast);
  return x.unsqueeze(0).to(MemoryFormat::ChannelsLast).squeeze(0);
}

}  // namespace strider::data
