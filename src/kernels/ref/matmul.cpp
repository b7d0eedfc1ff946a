// Reference matmul: float64 accumulation, parallel over output rows.
#include "kernels/matmul.h"
#include "kernels/parallel.h"
#include "strider/core/dispatch.h"

namespace strider::kernels::ref {

void matmul(const Matmul& p) {
  const Tensor &out = p.out, &a = p.a, &w = p.w, &bias = p.bias;
  const bool batched = out.dim() == 3;
  const int64_t B = batched ? out.sizes()[0] : 1, M = out.sizes()[out.dim() - 2], N = out.sizes()[out.dim() - 1];
  const int64_t K = a.sizes()[a.dim() - 1];
  auto st = [&](const Tensor& t, int64_t i) { return t.strides()[t.dim() - 3 + i]; };
  const int64_t ab = batched && a.sizes()[0] > 1 ? st(a, 0) : 0, wb = batched && w.sizes()[0] > 1 ? st(w, 0) : 0;
  const int64_t ob = batched ? st(out, 0) : 0;
  const int64_t am = a.strides()[a.dim() - 2], ak = a.strides()[a.dim() - 1];
  const int64_t wk = w.strides()[w.dim() - 2], wn = w.strides()[w.dim() - 1];
  const int64_t om = out.strides()[out.dim() - 2], on = out.strides()[out.dim() - 1];
  dispatch_floating(out.dtype(), "matmul", [&]<class T>() {
    const T* pa = static_cast<const T*>(a.data());
    const T* pw = static_cast<const T*>(w.data());
    const T* pb = bias.defined() ? static_cast<const T*>(bias.data()) : nullptr;
    T* po = static_cast<T*>(out.data());
    parallel_for(0, B * M, 16, [&](int64_t begin, int64_t end) {
      for (int64_t bm = begin; bm < end; ++bm) {
        const int64_t b = bm / M, m = bm % M;
        for (int64_t n = 0; n < N; ++n) {
          double acc = pb ? static_cast<double>(static_cast<opmath_t<T>>(pb[n * bias.strides()[0]])) : 0.0;
          for (int64_t k = 0; k < K; ++k)
            acc += static_cast<double>(static_cast<opmath_t<T>>(pa[b * ab + m * am + k * ak])) *
                   static_cast<double>(static_cast<opmath_t<T>>(pw[b * wb + k * wk + n * wn]));
          po[b * ob + m * om + n * on] = static_cast<T>(acc);
        }
      }
    });
  });
}

}  // namespace strider::kernels::ref
