// Bilinear resize as PyTorch 1.13's CPU upsample_bilinear2d (align_corners=False), which
// torchvision's tensor resize calls: per output row and column a source position
// scale * (dst + 0.5) - 0.5 (clamped at 0), its floor, the next index unless at the edge, and
// weights 1 - l and l (these equal PyTorch's bit for bit); each row is blended across, then the
// two rows. Built with -ffp-contract=off so the rounding does not depend on the compiler.
#include <algorithm>
#include <cmath>

#include "strider/core/error.h"
#include "strider/data/image_transforms.h"
#include "strider/ops/factory.h"

namespace strider::data {
namespace {

// Per output index along one axis: the two source indices and their weights. PyTorch keeps the
// scale in the image's dtype, the source position in double, and the weights in the image's
// dtype (lambda0 = 1 - lambda1 in that dtype); equal sizes are the identity.
template <class T>
struct Taps {
  std::vector<int64_t> i0, i1;
  std::vector<T> l0, l1;
};

template <class T>
Taps<T> taps(int64_t in, int64_t out) {
  Taps<T> t;
  const double scale = static_cast<double>(static_cast<T>(in) / static_cast<T>(out));
  for (int64_t d = 0; d < out; ++d) {
    int64_t i0 = d;
    T l1 = 0;
    if (in != out) {
      const double src = std::max(scale * (static_cast<double>(d) + 0.5) - 0.5, 0.0);
      i0 = static_cast<int64_t>(src);
      l1 = static_cast<T>(src - static_cast<double>(i0));
    }
    t.i0.push_back(i0);
    t.i1.push_back(i0 + (i0 < in - 1 ? 1 : 0));
    t.l1.push_back(l1);
    t.l0.push_back(static_cast<T>(1) - l1);
  }
  return t;
}

// T: the compute type; planes of [h, w] in, [oh, ow] out. Each blend is summed in double and
// rounded once: the closest we found to PyTorch's rounding (see the header).
template <class T>
void bilinear(const T* src, T* dst, int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow) {
  const Taps<T> ty = taps<T>(h, oh), tx = taps<T>(w, ow);
  auto blend = [](double a, T wa, double b, T wb) {
    return static_cast<T>(a * static_cast<double>(wa) + b * static_cast<double>(wb));
  };
  for (int64_t p = 0; p < planes; ++p) {
    const T* s = src + p * h * w;
    T* d = dst + p * oh * ow;
    for (int64_t y = 0; y < oh; ++y) {
      const T* r0 = s + ty.i0[y] * w;
      const T* r1 = s + ty.i1[y] * w;
      for (int64_t x = 0; x < ow; ++x) {
        const T top = blend(r0[tx.i0[x]], tx.l0[x], r0[tx.i1[x]], tx.l1[x]);
        const T bottom = blend(r1[tx.i0[x]], tx.l0[x], r1[tx.i1[x]], tx.l1[x]);
        d[y * ow + x] = blend(top, ty.l0[y], bottom, ty.l1[y]);
      }
    }
  }
}

}  // namespace

Tensor Resize::operator()(const Tensor& x, const SampleContext&) const {
  STRIDER_CHECK(x.defined() && x.dim() >= 2, "Resize", "expected an image [..., H, W], got ",
                x.defined() ? x.sizes() : IntArrayRef());
  STRIDER_CHECK(height > 0 && width > 0, "Resize", "output size must be positive, got ", height, "x", width);
  STRIDER_CHECK(x.dtype() == kByte || x.dtype() == kFloat || x.dtype() == kDouble, "Resize",
                "supports uint8, float32 and float64 images, got ", x.dtype(), "; convert it first");
  STRIDER_CHECK(x.size(-2) > 0 && x.size(-1) > 0, "Resize", "the image is empty: sizes ", x.sizes());
  const int64_t h = x.size(-2), w = x.size(-1);
  const int64_t planes = x.numel() / (h * w);
  std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().end());
  sizes[sizes.size() - 2] = height;
  sizes[sizes.size() - 1] = width;
  if (x.dtype() == kDouble) {
    Tensor in = x.contiguous(), out = strider::empty(sizes, kDouble);
    bilinear(in.data_ptr<double>(), out.data_ptr<double>(), planes, h, w, height, width);
    return out;
  }
  Tensor in = x.to(kFloat).contiguous();
  Tensor out = strider::empty(sizes, kFloat);
  bilinear(in.data_ptr<float>(), out.data_ptr<float>(), planes, h, w, height, width);
  if (x.dtype() == kFloat) return out;
  // torchvision rounds (half to even) and casts back.
  Tensor bytes = strider::empty(sizes, kByte);
  const float* f = out.data_ptr<float>();
  uint8_t* b = bytes.data_ptr<uint8_t>();
  for (int64_t i = 0; i < out.numel(); ++i) b[i] = static_cast<uint8_t>(std::nearbyint(f[i]));
  return bytes;
}

}  // namespace strider::data
