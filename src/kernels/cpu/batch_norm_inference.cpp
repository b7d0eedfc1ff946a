// Batch norm in evaluation mode is a per-channel map: one vectorized pass. oneDNN's primitive
// took 31 of 94 ms of a batch-1 ResNet-50 inference step (docs/benchmarks.md).
#include <cmath>
#include <vector>

#include "kernels/cpu/kernel_tables.h"
#include "kernels/isa_namespace.h"
#include "kernels/norm.h"
#include "kernels/parallel.h"
#include "strider/core/dispatch.h"
#include "strider/core/reduced_float.h"

namespace strider::kernels::cpu {
inline namespace STRIDER_ISA_NAMESPACE {
namespace {

float stat(const Tensor& t, int64_t c, float absent) {
  if (!t.defined()) return absent;
  return t.dtype() == kDouble ? static_cast<float>(static_cast<const double*>(t.data())[c * t.strides()[0]])
                              : static_cast<const float*>(t.data())[c * t.strides()[0]];
}

}  // namespace

void batch_norm_inference(const BatchNormForward& p) {
  const int64_t C = p.in.sizes()[1], numel = p.in.numel();
  // ((x - mean) * invstd) * weight + bias, in float: PyTorch's order of operations for any
  // layout (and oneDNN's), so results match PyTorch bit for bit.
  std::vector<float> mean(C), invstd(C), weight(C), bias(C);
  for (int64_t c = 0; c < C; ++c) {
    mean[c] = stat(p.mean, c, 0.0f);
    invstd[c] = 1.0f / std::sqrt(stat(p.var, c, 1.0f) + static_cast<float>(p.eps));
    weight[c] = stat(p.weight, c, 1.0f);
    bias[c] = stat(p.bias, c, 0.0f);
  }
  const float *mu = mean.data(), *is = invstd.data(), *w = weight.data(), *b = bias.data();
  dispatch_floating(p.in.dtype(), "batch_norm", [&]<class T>() {
    const T* x = static_cast<const T*>(p.in.data());
    T* y = static_cast<T*>(p.out.data());
    if (p.in.strides()[1] == 1 && C > 1) {  // channels-last: rows of C
      parallel_for(0, numel / C, std::max<int64_t>(1, 32768 / C), [&](int64_t begin, int64_t end) {
        for (int64_t m = begin; m < end; ++m) {
#pragma omp simd
          for (int64_t c = 0; c < C; ++c)
            store_as(y[m * C + c], (static_cast<float>(x[m * C + c]) - mu[c]) * is[c] * w[c] + b[c]);
        }
      });
    } else {  // plain: planes of `inner` per (n, c)
      const int64_t inner = numel / std::max<int64_t>(1, p.in.sizes()[0] * C);
      parallel_for(0, numel / std::max<int64_t>(1, inner), std::max<int64_t>(1, 32768 / std::max<int64_t>(1, inner)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t nc = begin; nc < end; ++nc) {
                       const int64_t c = nc % C;
                       const T* xi = x + nc * inner;
                       T* yi = y + nc * inner;
#pragma omp simd
                       for (int64_t i = 0; i < inner; ++i)
                         store_as(yi[i], (static_cast<float>(xi[i]) - mu[c]) * is[c] * w[c] + b[c]);
                     }
                   });
    }
  });
}

extern const BatchNormInferenceKernels batch_norm_inference_kernels{&batch_norm_inference};
}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels::cpu
