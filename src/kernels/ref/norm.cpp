// Reference batch and layer normalization: each channel (or row) is gathered into float64,
// normalized with the textbook formulas, and scattered back through the tensors' own strides.
#include <cmath>
#include <vector>

#include "kernels/norm.h"
#include "kernels/parallel.h"
#include "strider/core/dispatch.h"

namespace strider::kernels::ref {
namespace {

using Values = std::vector<double>;

// The elements of one slice of a tensor: element i of slice s is at s * slice_stride + offsets[i].
class Slices {
 public:
  // Batch norm: slices are channels (dim 1), elements the other dims in row-major order.
  static Slices channels(const Tensor& t) {
    Slices s(t, t.strides()[1]);
    DimVector sizes, strides;
    for (int64_t d = 0; d < t.dim(); ++d)
      if (d != 1) {
        sizes.push_back(t.sizes()[d]);
        strides.push_back(t.strides()[d]);
      }
    s.offsets_ = {0};
    for (size_t d = 0; d < sizes.size(); ++d) {
      std::vector<int64_t> next;
      next.reserve(s.offsets_.size() * sizes[d]);
      for (int64_t o : s.offsets_)
        for (int64_t i = 0; i < sizes[d]; ++i) next.push_back(o + i * strides[d]);
      s.offsets_ = std::move(next);
    }
    return s;
  }
  // Layer norm: slices are the rows of a 2-d tensor.
  static Slices rows(const Tensor& t) {
    Slices s(t, t.strides()[0]);
    for (int64_t j = 0; j < t.sizes()[1]; ++j) s.offsets_.push_back(j * t.strides()[1]);
    return s;
  }

  Values read(int64_t slice) const {
    Values v(offsets_.size());
    dispatch_floating(t_.dtype(), "normalization", [&]<class T>() {
      const T* p = static_cast<const T*>(t_.data()) + slice * slice_stride_;
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<opmath_t<T>>(p[offsets_[i]]));
    });
    return v;
  }
  void write(int64_t slice, const Values& v) const {
    dispatch_floating(t_.dtype(), "normalization", [&]<class T>() {
      T* p = static_cast<T*>(t_.data()) + slice * slice_stride_;
      for (size_t i = 0; i < v.size(); ++i) p[offsets_[i]] = static_cast<T>(static_cast<opmath_t<T>>(v[i]));
    });
  }

 private:
  Slices(const Tensor& t, int64_t slice_stride) : t_(t), slice_stride_(slice_stride) {}
  Tensor t_;
  int64_t slice_stride_;
  std::vector<int64_t> offsets_;
};

// Element i of a 1-d statistics or parameter tensor, as float64 (1 when undefined: no scale).
double get(const Tensor& t, int64_t i, double absent = 1.0) {
  if (!t.defined()) return absent;
  return dispatch_floating(t.dtype(), "normalization", [&]<class T>() {
    return static_cast<double>(static_cast<opmath_t<T>>(static_cast<const T*>(t.data())[i * t.strides()[0]]));
  });
}
void set(const Tensor& t, int64_t i, double v) {
  if (!t.defined()) return;
  dispatch_floating(t.dtype(), "normalization", [&]<class T>() {
    static_cast<T*>(t.data())[i * t.strides()[0]] = static_cast<T>(static_cast<opmath_t<T>>(v));
  });
}

double sum(const Values& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

// mean and biased variance of v.
std::pair<double, double> moments(const Values& v) {
  const double n = static_cast<double>(v.size()), m = sum(v) / n;
  double sq = 0;
  for (double x : v) sq += (x - m) * (x - m);
  return {m, sq / n};
}

}  // namespace

void batch_norm_forward(const BatchNormForward& p) {
  const Slices in = Slices::channels(p.in), out = Slices::channels(p.out);
  parallel_for(0, p.in.sizes()[1], 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      Values x = in.read(c);
      if (p.training) {
        auto [m, v] = moments(x);
        set(p.mean, c, m);
        set(p.var, c, v);
      }
      const double m = get(p.mean, c), invstd = 1.0 / std::sqrt(get(p.var, c) + p.eps);
      const double w = get(p.weight, c), b = get(p.bias, c, 0.0);
      for (double& e : x) e = (e - m) * invstd * w + b;
      out.write(c, x);
    }
  });
}

void batch_norm_backward(const BatchNormBackward& p) {
  const Slices in = Slices::channels(p.in), go = Slices::channels(p.grad_out), gi = Slices::channels(p.grad_in);
  parallel_for(0, p.in.sizes()[1], 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      Values x = in.read(c), g = go.read(c);
      const double m = get(p.mean, c), invstd = 1.0 / std::sqrt(get(p.var, c) + p.eps), w = get(p.weight, c);
      const double n = static_cast<double>(x.size());
      double sum_g = 0, sum_gx = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        x[i] = (x[i] - m) * invstd;  // x-hat from here on
        sum_g += g[i];
        sum_gx += g[i] * x[i];
      }
      set(p.grad_weight, c, sum_gx);
      set(p.grad_bias, c, sum_g);
      if (!p.grad_in.defined()) continue;
      for (size_t i = 0; i < x.size(); ++i)
        g[i] = p.training ? w * invstd * (g[i] - sum_g / n - x[i] * sum_gx / n) : g[i] * w * invstd;
      gi.write(c, g);
    }
  });
}

void layer_norm_forward(const LayerNormForward& p) {
  const Slices in = Slices::rows(p.in), out = Slices::rows(p.out);
  parallel_for(0, p.in.sizes()[0], 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      Values x = in.read(r);
      auto [m, v] = moments(x);
      set(p.mean, r, m);
      set(p.var, r, v);
      const double invstd = 1.0 / std::sqrt(v + p.eps);
      for (size_t j = 0; j < x.size(); ++j) x[j] = (x[j] - m) * invstd * get(p.weight, j) + get(p.bias, j, 0.0);
      out.write(r, x);
    }
  });
}

void layer_norm_backward(const LayerNormBackward& p) {
  const Slices in = Slices::rows(p.in), go = Slices::rows(p.grad_out), gi = Slices::rows(p.grad_in);
  const int64_t rows = p.in.sizes()[0], n = p.in.sizes()[1];
  auto xhat = [&](int64_t r) {
    Values x = in.read(r);
    const double m = get(p.mean, r), invstd = 1.0 / std::sqrt(get(p.var, r) + p.eps);
    for (double& e : x) e = (e - m) * invstd;
    return x;
  };
  if (p.grad_in.defined())
    parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        Values x = xhat(r), g = go.read(r);
        const double invstd = 1.0 / std::sqrt(get(p.var, r) + p.eps);
        double mean_gw = 0, mean_gwx = 0;
        for (int64_t j = 0; j < n; ++j) {
          g[j] *= get(p.weight, j);  // g * w from here on
          mean_gw += g[j] / n;
          mean_gwx += g[j] * x[j] / n;
        }
        for (int64_t j = 0; j < n; ++j) g[j] = invstd * (g[j] - mean_gw - x[j] * mean_gwx);
        gi.write(r, g);
      }
    });
  if (!p.grad_weight.defined() && !p.grad_bias.defined()) return;
  Values gw(n, 0.0), gb(n, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    Values x = xhat(r), g = go.read(r);
    for (int64_t j = 0; j < n; ++j) {
      gw[j] += g[j] * x[j];
      gb[j] += g[j];
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    set(p.grad_weight, j, gw[j]);
    set(p.grad_bias, j, gb[j]);
  }
}

}  // namespace strider::kernels::ref
