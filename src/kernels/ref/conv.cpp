// Reference convolution: direct loop nests in float64 accumulation over 5-d views (N, C, D, H,
// W; 1-d and 2-d convolutions get unit depth/height). A transposed convolution is the backward
// of a regular one with the same weight, so three loops cover all six entry points.
#include <vector>

#include "kernels/conv.h"
#include "strider/core/dispatch.h"

namespace strider::kernels::ref {
namespace {

struct View5 {
  char* base;
  int64_t size[5], stride[5];
  ScalarType dtype;
  double get(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) const {
    int64_t off = a * stride[0] + b * stride[1] + c * stride[2] + d * stride[3] + e * stride[4];
    return dispatch_floating(dtype, "conv", [&]<class T>() {
      return static_cast<double>(static_cast<opmath_t<T>>(reinterpret_cast<const T*>(base)[off]));
    });
  }
  void set(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e, double v) const {
    int64_t off = a * stride[0] + b * stride[1] + c * stride[2] + d * stride[3] + e * stride[4];
    dispatch_floating(dtype, "conv", [&]<class T>() { reinterpret_cast<T*>(base)[off] = static_cast<T>(v); });
  }
};

// Pads the spatial dims at the front to three.
View5 view5(const Tensor& t) {
  View5 v{static_cast<char*>(t.data()), {1, 1, 1, 1, 1}, {0, 0, 0, 0, 0}, t.dtype()};
  const int64_t nsp = t.dim() - 2, skip = 3 - nsp;
  v.size[0] = t.sizes()[0];
  v.stride[0] = t.strides()[0];
  v.size[1] = t.sizes()[1];
  v.stride[1] = t.strides()[1];
  for (int64_t i = 0; i < nsp; ++i) {
    v.size[2 + skip + i] = t.sizes()[2 + i];
    v.stride[2 + skip + i] = t.strides()[2 + i];
  }
  return v;
}

struct P3 {
  int64_t s[3], p[3], d[3], groups;
};
P3 params3(const ConvParams& p, int64_t nsp) {
  P3 r{{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, p.groups};
  const int64_t skip = 3 - nsp;
  for (int64_t i = 0; i < nsp; ++i) {
    r.s[skip + i] = p.stride[i];
    r.p[skip + i] = p.padding[i];
    r.d[skip + i] = p.dilation[i];
  }
  return r;
}

// Calls f(n, oc, ic, o[3], i[3], k[3]) for every (output position, kernel tap) whose input
// position lies inside the input, for regular convolution geometry (weight [OC, IC/g, k...]).
template <class F>
void for_each_tap(const View5& in, const View5& w, const View5& out, const P3& p, F f) {
  const int64_t G = p.groups, OCg = out.size[1] / G, ICg = w.size[1];
  for (int64_t n = 0; n < out.size[0]; ++n)
    for (int64_t oc = 0; oc < out.size[1]; ++oc) {
      const int64_t g = oc / OCg;
      for (int64_t od = 0; od < out.size[2]; ++od)
        for (int64_t oh = 0; oh < out.size[3]; ++oh)
          for (int64_t ow = 0; ow < out.size[4]; ++ow)
            for (int64_t ic = 0; ic < ICg; ++ic)
              for (int64_t kd = 0; kd < w.size[2]; ++kd) {
                const int64_t id = od * p.s[0] - p.p[0] + kd * p.d[0];
                if (id < 0 || id >= in.size[2]) continue;
                for (int64_t kh = 0; kh < w.size[3]; ++kh) {
                  const int64_t ih = oh * p.s[1] - p.p[1] + kh * p.d[1];
                  if (ih < 0 || ih >= in.size[3]) continue;
                  for (int64_t kw = 0; kw < w.size[4]; ++kw) {
                    const int64_t iw = ow * p.s[2] - p.p[2] + kw * p.d[2];
                    if (iw < 0 || iw >= in.size[4]) continue;
                    const int64_t o[3] = {od, oh, ow}, i[3] = {id, ih, iw}, k[3] = {kd, kh, kw};
                    f(n, oc, g * ICg + ic, ic, o, i, k);
                  }
                }
              }
    }
}

std::vector<double> zeros_like_view(const View5& v) {
  return std::vector<double>(static_cast<size_t>(v.size[0] * v.size[1] * v.size[2] * v.size[3] * v.size[4]), 0.0);
}
int64_t lin(const View5& v, int64_t a, int64_t b, const int64_t* s) {
  return (((a * v.size[1] + b) * v.size[2] + s[0]) * v.size[3] + s[1]) * v.size[4] + s[2];
}
void store(const View5& v, const std::vector<double>& acc) {
  for (int64_t a = 0; a < v.size[0]; ++a)
    for (int64_t b = 0; b < v.size[1]; ++b)
      for (int64_t c = 0; c < v.size[2]; ++c)
        for (int64_t d = 0; d < v.size[3]; ++d)
          for (int64_t e = 0; e < v.size[4]; ++e) {
            const int64_t s[3] = {c, d, e};
            v.set(a, b, c, d, e, acc[lin(v, a, b, s)]);
          }
}

// out = conv(in, w) for regular geometry.
void direct(const View5& out, const View5& in, const View5& w, const P3& p) {
  std::vector<double> acc = zeros_like_view(out);
  for_each_tap(in, w, out, p, [&](int64_t n, int64_t oc, int64_t ic, int64_t icg, const int64_t* o, const int64_t* i, const int64_t* k) {
    acc[lin(out, n, oc, o)] += in.get(n, ic, i[0], i[1], i[2]) * w.get(oc, icg, k[0], k[1], k[2]);
  });
  store(out, acc);
}

// grad_in = conv^T(grad_out, w) for regular geometry (grad_out plays "out").
void backward_data(const View5& grad_in, const View5& grad_out, const View5& w, const P3& p) {
  std::vector<double> acc = zeros_like_view(grad_in);
  for_each_tap(grad_in, w, grad_out, p, [&](int64_t n, int64_t oc, int64_t ic, int64_t icg, const int64_t* o, const int64_t* i, const int64_t* k) {
    acc[lin(grad_in, n, ic, i)] += grad_out.get(n, oc, o[0], o[1], o[2]) * w.get(oc, icg, k[0], k[1], k[2]);
  });
  store(grad_in, acc);
}

void backward_weight(const View5& grad_w, const View5& in, const View5& grad_out, const P3& p) {
  std::vector<double> acc = zeros_like_view(grad_w);
  for_each_tap(in, grad_w, grad_out, p, [&](int64_t n, int64_t oc, int64_t ic, int64_t icg, const int64_t* o, const int64_t* i, const int64_t* k) {
    acc[lin(grad_w, oc, icg, k)] += grad_out.get(n, oc, o[0], o[1], o[2]) * in.get(n, ic, i[0], i[1], i[2]);
  });
  store(grad_w, acc);
}

void add_bias(const View5& out, const Tensor& bias) {
  if (!bias.defined()) return;
  for (int64_t a = 0; a < out.size[0]; ++a)
    for (int64_t c = 0; c < out.size[1]; ++c) {
      const double b = dispatch_floating(bias.dtype(), "conv", [&]<class T>() {
        return static_cast<double>(static_cast<opmath_t<T>>(static_cast<const T*>(bias.data())[c * bias.strides()[0]]));
      });
      for (int64_t x = 0; x < out.size[2]; ++x)
        for (int64_t y = 0; y < out.size[3]; ++y)
          for (int64_t z = 0; z < out.size[4]; ++z) out.set(a, c, x, y, z, out.get(a, c, x, y, z) + b);
    }
}

}  // namespace

void conv_forward(const Tensor& out, const Tensor& in, const Tensor& weight, const Tensor& bias,
                  const ConvParams& p) {
  const P3 p3 = params3(p, in.dim() - 2);
  if (p.transposed) backward_data(view5(out), view5(in), view5(weight), p3);
  else direct(view5(out), view5(in), view5(weight), p3);
  add_bias(view5(out), bias);
}

void conv_backward_input(const Tensor& grad_in, const Tensor& grad_out, const Tensor& weight,
                         const ConvParams& p) {
  const P3 p3 = params3(p, grad_in.dim() - 2);
  if (p.transposed) direct(view5(grad_in), view5(grad_out), view5(weight), p3);
  else backward_data(view5(grad_in), view5(grad_out), view5(weight), p3);
}

void conv_backward_weight(const Tensor& grad_weight, const Tensor& grad_bias, const Tensor& in,
                          const Tensor& grad_out, const ConvParams& p) {
  const P3 p3 = params3(p, in.dim() - 2);
  if (p.transposed) backward_weight(view5(grad_weight), view5(grad_out), view5(in), p3);
  else backward_weight(view5(grad_weight), view5(in), view5(grad_out), p3);
  if (grad_bias.defined()) {
    View5 go = view5(grad_out);
    for (int64_t c = 0; c < go.size[1]; ++c) {
      double s = 0;
      for (int64_t a = 0; a < go.size[0]; ++a)
        for (int64_t x = 0; x < go.size[2]; ++x)
          for (int64_t y = 0; y < go.size[3]; ++y)
            for (int64_t z = 0; z < go.size[4]; ++z) s += go.get(a, c, x, y, z);
      dispatch_floating(grad_bias.dtype(), "conv", [&]<class T>() {
        static_cast<T*>(grad_bias.data())[c * grad_bias.strides()[0]] = static_cast<T>(s);
      });
    }
  }
}

}  // namespace strider::kernels::ref
