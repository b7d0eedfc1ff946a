// Training-mode batch norm on plain-layout (NCHW, NCL, NCDHW) batches, forward and backward, per
// channel: a channel's N planes are contiguous rows, so its statistics are row sums, and its
// planes (up to a few hundred KB) stay in L2 between the passes over them. oneDNN 2.6 is slow in
// this layout: for bfloat16, for float32 below AVX-512, and for float32 above it too (its generic
// ncsp_bnorm:any took 588 ms of a 3 s ResNet-50 float32 step on an Intel AMX host, and the step
// ran 0.92x as long, median of 6 alternations, with this kernel); the channels-last detour spent two
// transposes per tensor on it (38 ms of a 1.6 s ResNet-50 bfloat16 step's 390 ms of copies).
// Arithmetic in float32, sums per plane in float32 lanes and across planes in float64; PyTorch's
// formulas and order of operations. A ReLU, and a residual added before it, may be fused
// (batch_norm_relu.h).
#include <cmath>

#include "kernels/cpu/batch_norm_relu.h"
#include "kernels/cpu/batch_norm_stats.h"
#include "kernels/cpu/kernel_tables.h"
#include "kernels/isa_namespace.h"
#include "kernels/norm.h"
#include "kernels/parallel.h"
#include "strider/core/dispatch.h"
#include "strider/core/reduced_float.h"

namespace strider::kernels::cpu {
inline namespace STRIDER_ISA_NAMESPACE {
namespace {

// The planes of channel c: plane n starts at (n * C + c) * inner.
struct Planes {
  int64_t N, C, inner;
  explicit Planes(const Tensor& t)
      : N(t.sizes()[0]), C(t.sizes()[1]), inner(t.numel() / (t.sizes()[0] * t.sizes()[1])) {}
  int64_t offset(int64_t n, int64_t c) const { return (n * C + c) * inner; }
  double count() const { return static_cast<double>(N * inner); }
};

template <class T, bool kRelu, bool kResidual>
void forward_plain(const BatchNormForward& p) {
  const Planes pl(p.in);
  const T* x = static_cast<const T*>(p.in.data());
  const T* res = kResidual ? static_cast<const T*>(p.residual.data()) : nullptr;
  T* y = static_cast<T*>(p.out.data());
  const float eps = static_cast<float>(p.eps);
  parallel_for(0, pl.C, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      double sum = 0;
      for (int64_t n = 0; n < pl.N; ++n) {
        const T* xp = x + pl.offset(n, c);
        float s = 0;
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < pl.inner; ++i) s += static_cast<float>(xp[i]);
        sum += s;
      }
      const float mean = static_cast<float>(sum / pl.count());
      double squares = 0;  // about the mean: no cancellation
      for (int64_t n = 0; n < pl.N; ++n) {
        const T* xp = x + pl.offset(n, c);
        float s = 0;
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < pl.inner; ++i) {
          const float d = static_cast<float>(xp[i]) - mean;
          s += d * d;
        }
        squares += s;
      }
      const float var = static_cast<float>(squares / pl.count());
      set_channel_stat(p.mean, c, mean);
      set_channel_stat(p.var, c, var);
      const float invstd = 1.0f / std::sqrt(var + eps), w = channel_stat(p.weight, c, 1.0f), b = channel_stat(p.bias, c, 0.0f);
      for (int64_t n = 0; n < pl.N; ++n) {
        const T* xp = x + pl.offset(n, c);
        const T* rp = res + (kResidual ? pl.offset(n, c) : 0);
        T* yp = y + pl.offset(n, c);
#pragma omp simd
        for (int64_t i = 0; i < pl.inner; ++i) {
          float v = mul_add((static_cast<float>(xp[i]) - mean) * invstd, w, b);
          if constexpr (kResidual) v = plus_residual<T>(v, rp[i]);
          store_as(yp[i], kRelu ? relu_value(v) : v);
        }
      }
    }
  });
}

// kResidual (with kRelu): the sums pass writes the ReLU's input gradient to grad_residual, and
// the second pass reads it back instead of grad_out and the residual.
template <class T, bool kRelu, bool kResidual>
void backward_plain(const BatchNormBackward& p) {
  static_assert(kRelu || !kResidual);
  const Planes pl(p.in);
  const T* x = static_cast<const T*>(p.in.data());
  const T* g = static_cast<const T*>(p.grad_out.data());
  const T* res = kResidual ? static_cast<const T*>(p.residual.data()) : nullptr;
  T* grad_res = kResidual ? static_cast<T*>(p.grad_residual.data()) : nullptr;
  T* gi = p.grad_in.defined() ? static_cast<T*>(p.grad_in.data()) : nullptr;
  const float eps = static_cast<float>(p.eps);
  parallel_for(0, pl.C, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const float mean = channel_stat(p.mean, c, 0.0f), invstd = 1.0f / std::sqrt(channel_stat(p.var, c, 1.0f) + eps);
      const float w = channel_stat(p.weight, c, 1.0f), b = channel_stat(p.bias, c, 0.0f);
      // The output gradient at x (and residual r): zero where the fused ReLU's stored output is
      // not positive.
      auto grad_at = [=](float gv, float xv, const T* r, int64_t i) {
        if constexpr (kRelu) {
          float v = mul_add((xv - mean) * invstd, w, b);
          if constexpr (kResidual) v = plus_residual<T>(v, r[i]);
          return stored_positive<T>(v) ? gv : 0.0f;
        }
        return gv;
      };
      double sum_g = 0, dot = 0;  // sum of g and of g * (x - mean)
      for (int64_t n = 0; n < pl.N; ++n) {
        const T* xp = x + pl.offset(n, c);
        const T* gp = g + pl.offset(n, c);
        const T* rp = res + (kResidual ? pl.offset(n, c) : 0);
        T* grp = grad_res + (kResidual ? pl.offset(n, c) : 0);
        float sg = 0, sd = 0;
#pragma omp simd reduction(+ : sg, sd)
        for (int64_t i = 0; i < pl.inner; ++i) {
          const float xv = static_cast<float>(xp[i]), gv = grad_at(static_cast<float>(gp[i]), xv, rp, i);
          if constexpr (kResidual) store_as(grp[i], gv);
          sg += gv;
          sd += gv * (xv - mean);
        }
        sum_g += sg;
        dot += sd;
      }
      set_channel_stat(p.grad_weight, c, dot * invstd);
      set_channel_stat(p.grad_bias, c, sum_g);
      if (!gi) continue;
      const float k = static_cast<float>(dot / pl.count()) * invstd * invstd;
      const float grad_mean = static_cast<float>(sum_g / pl.count());
      const float scale = invstd * w;
      for (int64_t n = 0; n < pl.N; ++n) {
        const T* xp = x + pl.offset(n, c);
        const T* gp = (kResidual ? grad_res : g) + pl.offset(n, c);
        T* op = gi + pl.offset(n, c);
#pragma omp simd
        for (int64_t i = 0; i < pl.inner; ++i) {
          const float xv = static_cast<float>(xp[i]);
          const float gv = kResidual ? static_cast<float>(gp[i]) : grad_at(static_cast<float>(gp[i]), xv, nullptr, i);
          store_as(op[i], (gv - grad_mean - (xv - mean) * k) * scale);
        }
      }
    }
  });
}

template <class T>
void forward_typed(const BatchNormForward& p) {
  const bool residual = p.residual.defined();
  if (p.relu) return residual ? forward_plain<T, true, true>(p) : forward_plain<T, true, false>(p);
  residual ? forward_plain<T, false, true>(p) : forward_plain<T, false, false>(p);
}

template <class T>
void backward_typed(const BatchNormBackward& p) {
  if (!p.relu_out.defined()) return backward_plain<T, false, false>(p);
  p.residual.defined() ? backward_plain<T, true, true>(p) : backward_plain<T, true, false>(p);
}

void batch_norm_training_forward(const BatchNormForward& p) {
  if (p.in.dtype() == kBFloat16) return forward_typed<BFloat16>(p);
  forward_typed<float>(p);
}

void batch_norm_training_backward(const BatchNormBackward& p) {
  if (p.in.dtype() == kBFloat16) return backward_typed<BFloat16>(p);
  backward_typed<float>(p);
}

}  // namespace

extern const BatchNormTrainingKernels batch_norm_training_kernels{&batch_norm_training_forward,
                                                                  &batch_norm_training_backward};
}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels::cpu
