// Softmax as [outer, D, inner]: with inner == 1 each row is a unit-stride vector; otherwise
// the inner dimension is the vector and the loop walks D rows of it.
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/kernel_tables.h"
#include "kernels/isa_namespace.h"
#include "kernels/parallel.h"
#include "kernels/softmax.h"
#include "kernels/vec_math.h"
#include "strider/core/dispatch.h"
#include "strider/core/reduced_float.h"

namespace strider::kernels::cpu {
inline namespace STRIDER_ISA_NAMESPACE {
namespace {

template <class M>
inline M fast_exp(M x) {
  if constexpr (std::is_same_v<M, float>) return vmath::exp(x);
  else return std::exp(x);
}

template <class M>
inline M fast_log(M x) {
  if constexpr (std::is_same_v<M, float>) return vmath::log(x);
  else return std::log(x);
}

template <class T>
void softmax_typed(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  using M = opmath_t<T>;
  int64_t outer = 1, inner = 1;
  const int64_t D = in.sizes()[dim];
  for (int64_t d = 0; d < dim; ++d) outer *= in.sizes()[d];
  for (int64_t d = dim + 1; d < in.dim(); ++d) inner *= in.sizes()[d];
  const T* x = static_cast<const T*>(in.data());
  T* y = static_cast<T*>(out.data());
  // An empty dim anywhere (before, at or after `dim`) leaves nothing to compute, and the grain
  // sizes below divide by D * inner.
  if (out.numel() == 0) return;
  if (inner == 1) {
    parallel_for(0, outer, std::max<int64_t>(1, 16384 / D), [&](int64_t b, int64_t e) {
      std::vector<M> buf(D);
      for (int64_t o = b; o < e; ++o) {
        const T* xr = x + o * D;
        T* yr = y + o * D;
        M mx = -std::numeric_limits<M>::infinity();
        for (int64_t i = 0; i < D; ++i) mx = std::max(mx, static_cast<M>(xr[i]));
        if (std::isinf(mx) && mx < 0) mx = 0;  // a row of -inf: avoid inf - inf
        M sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t i = 0; i < D; ++i) {
          M v = static_cast<M>(xr[i]) - mx;
          buf[i] = v;
          sum += fast_exp(v);
        }
        if (log) {
          M ls = fast_log(sum);
#pragma omp simd
          for (int64_t i = 0; i < D; ++i) store_as(yr[i], buf[i] - ls);
        } else {
          M inv = M(1) / sum;
#pragma omp simd
          for (int64_t i = 0; i < D; ++i) store_as(yr[i], fast_exp(buf[i]) * inv);
        }
      }
    });
    return;
  }
  parallel_for(0, outer, std::max<int64_t>(1, 16384 / (D * inner)), [&](int64_t b, int64_t e) {
    std::vector<M> mx(inner), sum(inner);
    for (int64_t o = b; o < e; ++o) {
      const T* xo = x + o * D * inner;
      T* yo = y + o * D * inner;
      std::fill(mx.begin(), mx.end(), -std::numeric_limits<M>::infinity());
      std::fill(sum.begin(), sum.end(), M(0));
      for (int64_t i = 0; i < D; ++i)
        for (int64_t j = 0; j < inner; ++j) mx[j] = std::max(mx[j], static_cast<M>(xo[i * inner + j]));
      for (int64_t j = 0; j < inner; ++j)
        if (std::isinf(mx[j]) && mx[j] < 0) mx[j] = 0;
      for (int64_t i = 0; i < D; ++i) {
#pragma omp simd
        for (int64_t j = 0; j < inner; ++j) sum[j] += fast_exp(static_cast<M>(xo[i * inner + j]) - mx[j]);
      }
      for (int64_t i = 0; i < D; ++i) {
        if (log) {
          for (int64_t j = 0; j < inner; ++j)
            store_as(yo[i * inner + j], static_cast<M>(xo[i * inner + j]) - mx[j] - fast_log(sum[j]));
        } else {
#pragma omp simd
          for (int64_t j = 0; j < inner; ++j)
            store_as(yo[i * inner + j], fast_exp(static_cast<M>(xo[i * inner + j]) - mx[j]) / sum[j]);
        }
      }
    }
  });
}

}  // namespace

void softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  dispatch_floating(in.dtype(), log ? "log_softmax" : "softmax",
                    [&]<class T>() { softmax_typed<T>(out, in, dim, log); });
}

extern const SoftmaxKernels softmax_kernels{&softmax};
}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels::cpu
