// Padding, pixel shuffle and interpolation, composed from differentiable gathers: every
// resampling here is separable, one index_select (or a weighted sum of a few) per spatial dim.
#include <cmath>

#include "strider/autograd/grad_mode.h"
#include "strider/nn/functional.h"
#include "strider/ops/factory.h"

namespace strider::nn::functional {
namespace {

Tensor index_tensor(const std::vector<int64_t>& v) { return tensor(v); }

// Weighted sum over taps along `dim`: sum_k w_k[i] * x.select(dim, idx_k[i]).
Tensor taps_along(const Tensor& x, int64_t dim, const std::vector<std::vector<int64_t>>& idx,
                  const std::vector<std::vector<double>>& w) {
  Tensor out;
  DimVector shape(x.dim(), 1);
  shape[dim] = static_cast<int64_t>(idx[0].size());
  for (size_t k = 0; k < idx.size(); ++k) {
    Tensor g = index_select(x, dim, index_tensor(idx[k]));
    Tensor wk = tensor(w[k], x.dtype()).reshape(shape);
    Tensor term = g * wk;
    out = out.defined() ? out + term : term;
  }
  return out;
}

}  // namespace

Tensor pad(const Tensor& input, IntArrayRef pads, const std::string& mode, double value) {
  STRIDER_CHECK(pads.size() % 2 == 0 && static_cast<int64_t>(pads.size()) / 2 <= input.dim(), "pad",
                "padding length must be even and cover at most ", input.dim(), " dims, got ", pads);
  const int64_t npad = static_cast<int64_t>(pads.size()) / 2;
  if (mode == "constant") {
    // Crop first (negative pads), then place the result inside a filled tensor.
    Tensor x = input;
    bool any_positive = false;
    for (int64_t i = 0; i < npad; ++i) {
      const int64_t d = input.dim() - 1 - i, l = pads[2 * i], r = pads[2 * i + 1];
      const int64_t keep = x.sizes()[d] + std::min<int64_t>(l, 0) + std::min<int64_t>(r, 0);
      STRIDER_CHECK(keep >= 0, "pad", "negative padding ", pads, " removes more than dimension ", d, " of ", input.sizes());
      x = x.narrow(d, std::max<int64_t>(-l, 0), keep);
      any_positive |= l > 0 || r > 0;
    }
    if (!any_positive) return x.clone();
    // Surround with constant slabs (cat keeps autograd flowing), then lay out in the input's
    // suggested format as PyTorch allocates it.
    Tensor y = x;
    for (int64_t i = 0; i < npad; ++i) {
      const int64_t d = input.dim() - 1 - i, l = std::max<int64_t>(pads[2 * i], 0), r = std::max<int64_t>(pads[2 * i + 1], 0);
      std::vector<Tensor> parts;
      DimVector slab = y.sizes().vec();
      if (l) {
        slab[d] = l;
        parts.push_back(full(slab, value, y.dtype()));
      }
      parts.push_back(y);
      if (r) {
        slab[d] = r;
        parts.push_back(full(slab, value, y.dtype()));
      }
      y = cat(parts, d);
    }
    const MemoryFormat fmt = input.suggest_memory_format();
    return fmt == MemoryFormat::Contiguous ? y.contiguous() : y.to(fmt);
  }
  STRIDER_CHECK(mode == "reflect" || mode == "replicate" || mode == "circular", "pad", "unknown mode '", mode,
                "'; use constant, reflect, replicate or circular");
  // PyTorch's reflect and replicate kernels take an empty batch but no other empty dim.
  for (int64_t d = input.dim() == npad + 2 ? 1 : 0; d < input.dim() && mode != "circular"; ++d)
    STRIDER_CHECK(input.sizes()[d] > 0, "pad", mode, " padding copies values from the input, but dimension ", d,
                  " of input ", input.sizes(), " is empty (only the batch may be); PyTorch refuses it too: use "
                  "constant padding, or a non-empty input");
  Tensor y = input;
  for (int64_t i = 0; i < npad; ++i) {
    const int64_t d = input.dim() - 1 - i, l = pads[2 * i], r = pads[2 * i + 1], n = input.sizes()[d];
    STRIDER_CHECK(l >= 0 && r >= 0, "pad", mode, " padding must be non-negative, got ", pads);
    STRIDER_CHECK(mode != "reflect" || (l < n && r < n), "pad", "reflect padding (", l, ", ", r,
                  ") must be smaller than the dimension size ", n);
    STRIDER_CHECK(mode != "circular" || (l <= n && r <= n), "pad", "circular padding (", l, ", ", r,
                  ") wraps around dimension ", d, " of size ", n, " more than once; PyTorch refuses it too");
    std::vector<int64_t> idx;
    for (int64_t o = -l; o < n + r; ++o) {
      int64_t s = o;
      if (mode == "replicate") s = std::clamp<int64_t>(o, 0, n - 1);
      else if (mode == "reflect") s = o < 0 ? -o : (o >= n ? 2 * (n - 1) - o : o);
      else s = ((o % n) + n) % n;
      idx.push_back(s);
    }
    y = index_select(y, d, index_tensor(idx));
  }
  return y.contiguous();
}

namespace {

// Moves r x r blocks between channels and space: [.., C*r*r, H, W] <-> [.., C, H*r, W*r], as one
// reshape-permute-reshape; the result takes the input's suggested format (SPEC §11).
Tensor shuffle_pixels(const Tensor& x, int64_t r, bool to_space) {
  const char* op = to_space ? "pixel_shuffle" : "pixel_unshuffle";
  const int64_t nd = x.dim();
  STRIDER_CHECK(nd >= 3 && r > 0, op, "expected a [..., C, H, W] input and a positive factor, got ", x.sizes(), " and ", r);
  const int64_t c = x.sizes()[nd - 3], h = x.sizes()[nd - 2], w = x.sizes()[nd - 1];
  STRIDER_CHECK(to_space ? c % (r * r) == 0 : (h % r == 0 && w % r == 0), op, "shape ", x.sizes(),
                to_space ? " needs channels divisible by r*r" : " needs H and W divisible by r", " (r=", r, ")");
  DimVector lead(x.sizes().begin(), x.sizes().end() - 3), split = lead, perm, out = lead;
  const int64_t b = static_cast<int64_t>(lead.size());
  for (int64_t i = 0; i < b; ++i) perm.push_back(i);
  if (to_space) {
    for (int64_t v : {c / (r * r), r, r, h, w}) split.push_back(v);
    for (int64_t v : {b, b + 3, b + 1, b + 4, b + 2}) perm.push_back(v);
    for (int64_t v : {c / (r * r), h * r, w * r}) out.push_back(v);
  } else {
    for (int64_t v : {c, h / r, r, w / r, r}) split.push_back(v);
    for (int64_t v : {b, b + 2, b + 4, b + 1, b + 3}) perm.push_back(v);
    for (int64_t v : {c * r * r, h / r, w / r}) out.push_back(v);
  }
  Tensor y = x.reshape(split).permute(perm).reshape(out);
  return nd == 4 && x.suggest_memory_format() != MemoryFormat::Contiguous ? y.to(x.suggest_memory_format()) : y;
}

}  // namespace

Tensor pixel_shuffle(const Tensor& x, int64_t r) { return shuffle_pixels(x, r, true); }
Tensor pixel_unshuffle(const Tensor& x, int64_t r) { return shuffle_pixels(x, r, false); }

Tensor interpolate(const Tensor& input, const InterpolateOptions& o) {
  const int64_t nsp = input.dim() - 2;
  STRIDER_CHECK(nsp >= 1 && nsp <= 3, "interpolate", "expected a 3-d, 4-d or 5-d input, got ", input.sizes());
  STRIDER_CHECK(o.size.empty() != o.scale_factor.empty(), "interpolate", "give exactly one of size and scale_factor");
  const std::string& m = o.mode;
  const bool linear_mode = m == "linear" || m == "bilinear" || m == "trilinear";
  STRIDER_CHECK(m == "nearest" || m == "nearest-exact" || linear_mode || m == "bicubic" || m == "area", "interpolate",
                "unknown mode '", m, "'");
  STRIDER_CHECK(!linear_mode || (m == "linear") == (nsp == 1), "interpolate", "mode ", m, " does not fit a ", input.dim(),
                "-d input");
  DimVector out_size;
  std::vector<double> scales;  // input / output coordinate ratio per dim, as PyTorch computes it
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t in = input.sizes()[2 + i];
    if (!o.size.empty()) {
      out_size.push_back(o.size.size() == 1 ? o.size[0] : o.size[i]);
      scales.push_back(static_cast<double>(in) / static_cast<double>(out_size.back()));
    } else {
      const double sf = o.scale_factor.size() == 1 ? o.scale_factor[0] : o.scale_factor[i];
      out_size.push_back(static_cast<int64_t>(std::floor(static_cast<double>(in) * sf)));
      scales.push_back(1.0 / sf);
    }
    STRIDER_CHECK(out_size.back() > 0, "interpolate", "output size must be positive, got ", IntArrayRef(out_size));
  }
  for (int64_t i = 0; i < nsp; ++i)
    STRIDER_CHECK(input.sizes()[2 + i] > 0, "interpolate", "input and output sizes should be greater than 0, but spatial "
                  "dimension ", 2 + i, " of input ", input.sizes(), " is empty (output size ", IntArrayRef(out_size),
                  "); PyTorch refuses it too");
  if (m == "area") return nsp == 2 ? adaptive_avg_pool2d(input, out_size) : adaptive_avg_pool3d(input, out_size);
  Tensor y = input;
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t d = 2 + i, in = input.sizes()[d], out = out_size[i];
    const double scale = o.align_corners ? (out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0) : scales[i];
    if (m == "nearest" || m == "nearest-exact") {
      std::vector<int64_t> idx;
      for (int64_t j = 0; j < out; ++j) {
        const double src = m == "nearest" ? std::floor(j * scales[i]) : std::floor((j + 0.5) * scales[i]);
        idx.push_back(std::min<int64_t>(static_cast<int64_t>(src), in - 1));
      }
      y = index_select(y, d, index_tensor(idx));
    } else if (linear_mode) {
      std::vector<std::vector<int64_t>> idx(2);
      std::vector<std::vector<double>> w(2);
      for (int64_t j = 0; j < out; ++j) {
        double src = o.align_corners ? j * scale : std::max(0.0, (j + 0.5) * scale - 0.5);
        const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(std::floor(src)), in - 1);
        const int64_t i1 = std::min<int64_t>(i0 + 1, in - 1);
        const double l = src - static_cast<double>(i0);
        idx[0].push_back(i0);
        idx[1].push_back(i1);
        w[0].push_back(1.0 - l);
        w[1].push_back(l);
      }
      y = taps_along(y, d, idx, w);
    } else {  // bicubic, A = -0.75, border taps clamped
      const double A = -0.75;
      auto near = [&](double t) { return ((A + 2) * t - (A + 3)) * t * t + 1; };
      auto far = [&](double t) { return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A; };
      std::vector<std::vector<int64_t>> idx(4);
      std::vector<std::vector<double>> w(4);
      for (int64_t j = 0; j < out; ++j) {
        const double src = o.align_corners ? j * scale : (j + 0.5) * scale - 0.5;
        const int64_t f = static_cast<int64_t>(std::floor(src));
        const double t = src - static_cast<double>(f);
        const double ws[4] = {far(t + 1), near(t), near(1 - t), far(2 - t)};
        for (int k = 0; k < 4; ++k) {
          idx[k].push_back(std::clamp<int64_t>(f - 1 + k, 0, in - 1));
          w[k].push_back(ws[k]);
        }
      }
      y = taps_along(y, d, idx, w);
    }
  }
  // Layout (SPEC §11): nearest/bilinear/trilinear keep the input's suggested format; bicubic and
  // 1-d linear are contiguous.
  const MemoryFormat fmt = (m == "bicubic" || nsp == 1) ? MemoryFormat::Contiguous : input.suggest_memory_format();
  return fmt == MemoryFormat::Contiguous ? y.contiguous() : y.to(fmt);
}

}  // namespace strider::nn::functional
