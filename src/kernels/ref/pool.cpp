// Reference pooling over 5-d views (2-d pooling has unit depth), parallel over images x channels.
#include <cmath>
#include <limits>

#include "kernels/parallel.h"
#include "kernels/pool.h"
#include "strider/core/dispatch.h"

namespace strider::kernels::ref {
namespace {

struct Geo {
  int64_t N, C, in[3], out[3];
  int64_t in_st[5], out_st[5];
};

// Sizes/strides with the spatial dims padded at the front to three.
Geo geo(const Tensor& in, const Tensor& out) {
  Geo g{};
  g.N = in.sizes()[0];
  g.C = in.sizes()[1];
  const int64_t nsp = in.dim() - 2, skip = 3 - nsp;
  for (int i = 0; i < 3; ++i) g.in[i] = g.out[i] = 1;
  for (int i = 0; i < 5; ++i) g.in_st[i] = g.out_st[i] = 0;
  g.in_st[0] = in.strides()[0];
  g.in_st[1] = in.strides()[1];
  g.out_st[0] = out.strides()[0];
  g.out_st[1] = out.strides()[1];
  for (int64_t i = 0; i < nsp; ++i) {
    g.in[skip + i] = in.sizes()[2 + i];
    g.out[skip + i] = out.sizes()[2 + i];
    g.in_st[2 + skip + i] = in.strides()[2 + i];
    g.out_st[2 + skip + i] = out.strides()[2 + i];
  }
  return g;
}

struct Win {
  int64_t k[3], s[3], p[3], d[3];
};

Win win(const PoolParams& p, int64_t nsp) {
  Win w{{1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}};
  const int64_t skip = 3 - nsp;
  for (int64_t i = 0; i < nsp; ++i) {
    w.k[skip + i] = p.kernel[i];
    w.s[skip + i] = p.stride[i];
    w.p[skip + i] = p.padding[i];
    w.d[skip + i] = p.dilation.empty() ? 1 : p.dilation[i];
  }
  return w;
}

template <class Visit>
void for_each_output(const Geo& g, Visit visit) {
  parallel_for(0, g.N * g.C, 1, [&](int64_t b, int64_t e) {
    for (int64_t nc = b; nc < e; ++nc) {
      const int64_t n = nc / g.C, c = nc % g.C;
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow) visit(n, c, od, oh, ow);
    }
  });
}

}  // namespace

void pool_forward(const Tensor& out, const Tensor& indices, const Tensor& in, const PoolParams& p) {
  const Geo g = geo(in, out);
  const Win w = win(p, in.dim() - 2);
  dispatch_floating(in.dtype(), "pool", [&]<class T>() {
    const T* x = static_cast<const T*>(in.data());
    T* y = static_cast<T*>(out.data());
    int64_t* idx = indices.defined() ? static_cast<int64_t*>(indices.data()) : nullptr;
    for_each_output(g, [&](int64_t n, int64_t c, int64_t od, int64_t oh, int64_t ow) {
      const int64_t o[3] = {od, oh, ow};
      int64_t start[3], end[3], pool_size = 1;
      for (int i = 0; i < 3; ++i) {
        start[i] = o[i] * w.s[i] - w.p[i];
        end[i] = std::min(start[i] + (w.k[i] - 1) * w.d[i] + 1, g.in[i] + w.p[i]);
        pool_size *= (end[i] - start[i] + w.d[i] - 1) / w.d[i];
      }
      double acc = p.is_max ? -std::numeric_limits<double>::infinity() : 0.0;
      int64_t best = -1, count = 0;
      for (int64_t id = start[0]; id < end[0]; id += w.d[0]) {
        if (id < 0 || id >= g.in[0]) continue;
        for (int64_t ih = start[1]; ih < end[1]; ih += w.d[1]) {
          if (ih < 0 || ih >= g.in[1]) continue;
          for (int64_t iw = start[2]; iw < end[2]; iw += w.d[2]) {
            if (iw < 0 || iw >= g.in[2]) continue;
            const double v = static_cast<double>(static_cast<opmath_t<T>>(
                x[n * g.in_st[0] + c * g.in_st[1] + id * g.in_st[2] + ih * g.in_st[3] + iw * g.in_st[4]]));
            ++count;
            if (p.is_max) {
              if (best < 0 || v > acc || std::isnan(v)) {  // PyTorch's rule: the last NaN wins
                acc = v;
                best = (id * g.in[1] + ih) * g.in[2] + iw;
              }
            } else {
              acc += v;
            }
          }
        }
      }
      const int64_t oo = n * g.out_st[0] + c * g.out_st[1] + od * g.out_st[2] + oh * g.out_st[3] + ow * g.out_st[4];
      if (!p.is_max) {
        const int64_t div = p.divisor_override ? p.divisor_override : (p.count_include_pad ? pool_size : count);
        acc = div > 0 ? acc / static_cast<double>(div) : 0.0;
      }
      y[oo] = static_cast<T>(acc);
      if (idx) idx[oo] = best;
    });
  });
}

namespace {

// The input region an output element averaged over, and the divisor it used.
struct Region {
  int64_t start[3], end[3], divisor;
};

// Scatters grad_out into (zeroed) grad_in: to the recorded index for max pooling, or evenly over
// region(o) for average pooling. Each (n, c) plane belongs to one thread, so no races.
template <class RegionFn>
void scatter_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& indices, bool is_max,
                      const char* name, RegionFn region) {
  const Geo g = geo(grad_in, grad_out);
  dispatch_floating(grad_in.dtype(), name, [&]<class T>() {
    T* gx = static_cast<T*>(grad_in.data());
    const T* gy = static_cast<const T*>(grad_out.data());
    const int64_t* idx = indices.defined() ? static_cast<const int64_t*>(indices.data()) : nullptr;
    for_each_output(g, [&](int64_t n, int64_t c, int64_t od, int64_t oh, int64_t ow) {
      const int64_t oo = n * g.out_st[0] + c * g.out_st[1] + od * g.out_st[2] + oh * g.out_st[3] + ow * g.out_st[4];
      const double go = static_cast<double>(static_cast<opmath_t<T>>(gy[oo]));
      auto add = [&](int64_t id, int64_t ih, int64_t iw, double v) {
        T& dst = gx[n * g.in_st[0] + c * g.in_st[1] + id * g.in_st[2] + ih * g.in_st[3] + iw * g.in_st[4]];
        dst = static_cast<T>(static_cast<double>(static_cast<opmath_t<T>>(dst)) + v);
      };
      if (is_max) {
        const int64_t b = idx[oo];
        if (b >= 0) add(b / (g.in[1] * g.in[2]), (b / g.in[2]) % g.in[1], b % g.in[2], go);
        return;
      }
      const int64_t o[3] = {od, oh, ow};
      const Region r = region(g, o);
      if (r.divisor <= 0) return;
      const double share = go / static_cast<double>(r.divisor);
      for (int64_t id = r.start[0]; id < r.end[0]; ++id)
        for (int64_t ih = r.start[1]; ih < r.end[1]; ++ih)
          for (int64_t iw = r.start[2]; iw < r.end[2]; ++iw) add(id, ih, iw, share);
    });
  });
}

inline int64_t start_index(int64_t o, int64_t O, int64_t I) { return (o * I) / O; }
inline int64_t end_index(int64_t o, int64_t O, int64_t I) { return ((o + 1) * I + O - 1) / O; }

}  // namespace

void pool_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& indices, const PoolParams& p) {
  const Win w = win(p, grad_in.dim() - 2);
  scatter_backward(grad_in, grad_out, indices, p.is_max, "pool_backward", [&](const Geo& g, const int64_t* o) {
    Region r{};
    int64_t pool_size = 1, count = 1;
    for (int i = 0; i < 3; ++i) {
      r.start[i] = o[i] * w.s[i] - w.p[i];
      r.end[i] = std::min(r.start[i] + w.k[i], g.in[i] + w.p[i]);
      pool_size *= r.end[i] - r.start[i];
      r.start[i] = std::max<int64_t>(r.start[i], 0);
      r.end[i] = std::min(r.end[i], g.in[i]);
      count *= std::max<int64_t>(r.end[i] - r.start[i], 0);
    }
    r.divisor = p.divisor_override ? p.divisor_override : (p.count_include_pad ? pool_size : count);
    return r;
  });
}


void adaptive_pool_forward(const Tensor& out, const Tensor& indices, const Tensor& in, bool is_max) {
  const Geo g = geo(in, out);
  dispatch_floating(in.dtype(), "adaptive_pool", [&]<class T>() {
    const T* x = static_cast<const T*>(in.data());
    T* y = static_cast<T*>(out.data());
    int64_t* idx = indices.defined() ? static_cast<int64_t*>(indices.data()) : nullptr;
    for_each_output(g, [&](int64_t n, int64_t c, int64_t od, int64_t oh, int64_t ow) {
      const int64_t o[3] = {od, oh, ow};
      int64_t s[3], e[3];
      for (int i = 0; i < 3; ++i) {
        s[i] = start_index(o[i], g.out[i], g.in[i]);
        e[i] = end_index(o[i], g.out[i], g.in[i]);
      }
      double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
      int64_t best = -1, count = 0;
      for (int64_t id = s[0]; id < e[0]; ++id)
        for (int64_t ih = s[1]; ih < e[1]; ++ih)
          for (int64_t iw = s[2]; iw < e[2]; ++iw) {
            const double v = static_cast<double>(static_cast<opmath_t<T>>(
                x[n * g.in_st[0] + c * g.in_st[1] + id * g.in_st[2] + ih * g.in_st[3] + iw * g.in_st[4]]));
            ++count;
            if (!is_max) acc += v;
            else if (best < 0 || v > acc || (std::isnan(v) && !std::isnan(acc))) {
              acc = v;
              best = (id * g.in[1] + ih) * g.in[2] + iw;
            }
          }
      const int64_t oo = n * g.out_st[0] + c * g.out_st[1] + od * g.out_st[2] + oh * g.out_st[3] + ow * g.out_st[4];
      y[oo] = static_cast<T>(is_max ? acc : (count ? acc / static_cast<double>(count) : NAN));
      if (idx) idx[oo] = best;
    });
  });
}

void adaptive_pool_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& indices, bool is_max) {
  scatter_backward(grad_in, grad_out, indices, is_max, "adaptive_pool_backward", [](const Geo& g, const int64_t* o) {
    Region r{};
    r.divisor = 1;
    for (int i = 0; i < 3; ++i) {
      r.start[i] = start_index(o[i], g.out[i], g.in[i]);
      r.end[i] = end_index(o[i], g.out[i], g.in[i]);
      r.divisor *= r.end[i] - r.start[i];
    }
    return r;
  });
}

}  // namespace strider::kernels::ref
