// Training-mode batch norm on channels-last batches (NLC-strided, NHWC, NDHWC), forward and
// backward: the data is rows of C channels, and every pass runs along rows with one float32
// accumulator per channel. oneDNN 2.6's nspc kernel (jit_bnorm_t) took a third of a ResNet-50
// channels-last bfloat16 training step on an Intel AMX host.
//
// The statistics are two-pass ones without a second pass over memory: the rows are cut into
// blocks of at most 128 KB and 1024 rows (float32 sums of at most 1024 values), which stay in L2
// while each block's mean and then its sum of squares about that mean are taken; the blocks merge
// in float64, in block order (Chan, Golub and LeVeque's pairwise update). The blocks depend on
// the shape only, so the result is the same for any thread count. Normalizing is
// (x - mean) * alpha + bias: PyTorch's x * alpha + beta loses the output's low bits to
// cancellation when the mean is large against the spread. A fused ReLU, and a residual added
// before it (batch_norm_relu.h), save ResNet's separate add and ReLU passes.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "kernels/cpu/batch_norm_relu.h"
#include "kernels/cpu/batch_norm_stats.h"
#include "kernels/cpu/kernel_tables.h"
#include "kernels/isa_namespace.h"
#include "kernels/norm.h"
#include "kernels/parallel.h"
#include "strider/core/reduced_float.h"

namespace strider::kernels::cpu {
inline namespace STRIDER_ISA_NAMESPACE {
namespace {

// The batch as `rows` rows of C; block b covers rows [b * rows_per_block, ...).
struct RowBlocks {
  int64_t C, rows, rows_per_block, count;
  RowBlocks(const Tensor& t, int64_t element_bytes) : C(t.sizes()[1]), rows(t.numel() / t.sizes()[1]) {
    constexpr int64_t kBlockBytes = 128 * 1024, kMaxRows = 1024, kMinBlocks = 16;  // 16: work for every core
    rows_per_block = std::clamp<int64_t>(kBlockBytes / (C * element_bytes), 1, kMaxRows);
    rows_per_block = std::min(rows_per_block, std::max<int64_t>(1, (rows + kMinBlocks - 1) / kMinBlocks));
    count = (rows + rows_per_block - 1) / rows_per_block;
  }
  int64_t begin(int64_t b) const { return b * rows_per_block; }
  int64_t end(int64_t b) const { return std::min(rows, (b + 1) * rows_per_block); }
};

// Two float32 vectors of C per block, uninitialized.
class BlockPartials {
 public:
  BlockPartials(int64_t blocks, int64_t C) : C_(C), data_(new float[static_cast<size_t>(2 * blocks * C)]) {}
  float* first(int64_t b) { return data_.get() + 2 * b * C_; }
  float* second(int64_t b) { return data_.get() + (2 * b + 1) * C_; }

 private:
  int64_t C_;
  std::unique_ptr<float[]> data_;
};

// Per-channel values for the passes over rows.
struct ChannelVectors {
  std::vector<float> a, b, c;
  explicit ChannelVectors(int64_t C) : a(C), b(C), c(C) {}
};

template <class T, bool kRelu, bool kResidual>
void forward_rows(const BatchNormForward& p) {
  const RowBlocks blocks(p.in, sizeof(T));
  const int64_t C = blocks.C;
  const T* x = static_cast<const T*>(p.in.data());
  const T* res = kResidual ? static_cast<const T*>(p.residual.data()) : nullptr;
  T* y = static_cast<T*>(p.out.data());
  // Each block's mean and sum of squares about it, C of each (float32, as they were summed).
  BlockPartials part(blocks.count, C);
  parallel_for(0, blocks.count, 1, [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) {
      const int64_t r0 = blocks.begin(b), r1 = blocks.end(b);
      float* m = part.first(b);
      float* a = part.second(b);
      std::fill(m, m + C, 0.0f);
      for (int64_t r = r0; r < r1; ++r) {
        const T* xr = x + r * C;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) m[c] += static_cast<float>(xr[c]);
      }
      const float n = static_cast<float>(r1 - r0);
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) m[c] /= n;
      std::fill(a, a + C, 0.0f);
      for (int64_t r = r0; r < r1; ++r) {
        const T* xr = x + r * C;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) {
          const float d = static_cast<float>(xr[c]) - m[c];
          a[c] += d * d;
        }
      }
    }
  });
  // Merged in block order, all channels at once.
  std::vector<double> mean64(C, 0.0), m2(C, 0.0);
  double n = 0;
  for (int64_t b = 0; b < blocks.count; ++b) {
    const double nb = static_cast<double>(blocks.end(b) - blocks.begin(b)), n_ab = n + nb;
    const double w_mean = nb / n_ab, w_m2 = n * nb / n_ab;
    const float *bm = part.first(b), *bm2 = part.second(b);
    double *mu = mean64.data(), *q = m2.data();
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) {
      const double delta = static_cast<double>(bm[c]) - mu[c];
      mu[c] += delta * w_mean;
      q[c] += static_cast<double>(bm2[c]) + delta * delta * w_m2;
    }
    n = n_ab;
  }
  ChannelVectors v(C);  // mean, alpha, bias
  for (int64_t c = 0; c < C; ++c) {
    const float mean_f = static_cast<float>(mean64[c]), var_f = static_cast<float>(m2[c] / n);
    set_channel_stat(p.mean, c, mean_f);
    set_channel_stat(p.var, c, var_f);
    const float invstd = 1.0f / std::sqrt(var_f + static_cast<float>(p.eps));
    v.a[c] = mean_f;
    v.b[c] = invstd * channel_stat(p.weight, c, 1.0f);
    v.c[c] = channel_stat(p.bias, c, 0.0f);
  }
  const float *mean = v.a.data(), *alpha = v.b.data(), *bias = v.c.data();
  parallel_for(0, blocks.rows, std::max<int64_t>(1, 32768 / C), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * C;
      const T* rr = res + (kResidual ? r * C : 0);
      T* yr = y + r * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) {
        float v = mul_add(static_cast<float>(xr[c]) - mean[c], alpha[c], bias[c]);
        if constexpr (kResidual) v = plus_residual<T>(v, rr[c]);
        store_as(yr[c], kRelu ? relu_value(v) : v);
      }
    }
  });
}

// kResidual (with kRelu): the sums pass writes the ReLU's input gradient to grad_residual, and
// the second pass reads it back instead of grad_out and the residual.
template <class T, bool kRelu, bool kResidual>
void backward_rows(const BatchNormBackward& p) {
  static_assert(kRelu || !kResidual);
  const RowBlocks blocks(p.in, 2 * sizeof(T));  // x and grad_out share L2
  const int64_t C = blocks.C;
  const T* x = static_cast<const T*>(p.in.data());
  const T* g = static_cast<const T*>(p.grad_out.data());
  const T* res = kResidual ? static_cast<const T*>(p.residual.data()) : nullptr;
  T* grad_res = kResidual ? static_cast<T*>(p.grad_residual.data()) : nullptr;
  ChannelVectors v(C);  // mean, invstd, and alpha for the ReLU's mask (bias: relu_bias)
  std::vector<float> relu_bias(kRelu ? C : 0);
  for (int64_t c = 0; c < C; ++c) {
    v.a[c] = channel_stat(p.mean, c, 0.0f);
    v.b[c] = 1.0f / std::sqrt(channel_stat(p.var, c, 1.0f) + static_cast<float>(p.eps));
    v.c[c] = v.b[c] * channel_stat(p.weight, c, 1.0f);
    if (kRelu) relu_bias[c] = channel_stat(p.bias, c, 0.0f);
  }
  const float *mean = v.a.data(), *invstd = v.b.data(), *alpha = v.c.data(), *beta = relu_bias.data();
  // The output gradient at x (and residual r): zero where the fused ReLU's stored output is not
  // positive.
  auto grad_at = [=](float gv, float xv, int64_t c, const T* r) {
    if constexpr (kRelu) {
      float v = mul_add(xv - mean[c], alpha[c], beta[c]);
      if constexpr (kResidual) v = plus_residual<T>(v, r[c]);
      return stored_positive<T>(v) ? gv : 0.0f;
    }
    return gv;
  };
  // Each block's sum of g and of g * (x - mean), C of each.
  BlockPartials part(blocks.count, C);
  parallel_for(0, blocks.count, 1, [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) {
      float *sg = part.first(b), *sd = part.second(b);
      std::fill(sg, sg + C, 0.0f);
      std::fill(sd, sd + C, 0.0f);
      for (int64_t r = blocks.begin(b); r < blocks.end(b); ++r) {
        const T* xr = x + r * C;
        const T* gr = g + r * C;
        const T* rr = res + (kResidual ? r * C : 0);
        T* grr = grad_res + (kResidual ? r * C : 0);
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) {
          const float xv = static_cast<float>(xr[c]), gv = grad_at(static_cast<float>(gr[c]), xv, c, rr);
          if constexpr (kResidual) store_as(grr[c], gv);
          sg[c] += gv;
          sd[c] += gv * (xv - mean[c]);
        }
      }
    }
  });
  std::vector<double> sum_g(C, 0.0), dot(C, 0.0);
  for (int64_t b = 0; b < blocks.count; ++b) {
    const float *sg = part.first(b), *sd = part.second(b);
    double *tg = sum_g.data(), *td = dot.data();
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) {
      tg[c] += sg[c];
      td[c] += sd[c];
    }
  }
  const double count = static_cast<double>(blocks.rows);
  ChannelVectors w(C);  // grad_mean, k, scale: gi = (g - grad_mean - (x - mean) * k) * scale
  for (int64_t c = 0; c < C; ++c) {
    set_channel_stat(p.grad_weight, c, dot[c] * invstd[c]);
    set_channel_stat(p.grad_bias, c, sum_g[c]);
    w.a[c] = static_cast<float>(sum_g[c] / count);
    w.b[c] = static_cast<float>(dot[c] / count) * invstd[c] * invstd[c];
    w.c[c] = invstd[c] * channel_stat(p.weight, c, 1.0f);
  }
  if (!p.grad_in.defined()) return;
  const float *grad_mean = w.a.data(), *k = w.b.data(), *scale = w.c.data();
  T* gi = static_cast<T*>(p.grad_in.data());
  parallel_for(0, blocks.rows, std::max<int64_t>(1, 32768 / C), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * C;
      const T* gr = (kResidual ? grad_res : g) + r * C;
      T* out = gi + r * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) {
        const float xv = static_cast<float>(xr[c]);
        const float gv = kResidual ? static_cast<float>(gr[c]) : grad_at(static_cast<float>(gr[c]), xv, c, nullptr);
        store_as(out[c], (gv - grad_mean[c] - (xv - mean[c]) * k[c]) * scale[c]);
      }
    }
  });
}

template <class T>
void forward_typed(const BatchNormForward& p) {
  const bool residual = p.residual.defined();
  if (p.relu) return residual ? forward_rows<T, true, true>(p) : forward_rows<T, true, false>(p);
  residual ? forward_rows<T, false, true>(p) : forward_rows<T, false, false>(p);
}

template <class T>
void backward_typed(const BatchNormBackward& p) {
  if (!p.relu_out.defined()) return backward_rows<T, false, false>(p);
  p.residual.defined() ? backward_rows<T, true, true>(p) : backward_rows<T, true, false>(p);
}

void forward_channels_last(const BatchNormForward& p) {
  if (p.in.dtype() == kBFloat16) return forward_typed<BFloat16>(p);
  forward_typed<float>(p);
}

void backward_channels_last(const BatchNormBackward& p) {
  if (p.in.dtype() == kBFloat16) return backward_typed<BFloat16>(p);
  backward_typed<float>(p);
}

}  // namespace

extern const BatchNormChannelsLastKernels batch_norm_channels_last_kernels{&forward_channels_last,
                                                                          &backward_channels_last};
}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels::cpu
