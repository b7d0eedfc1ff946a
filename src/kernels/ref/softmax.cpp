#include <cmath>
#include <limits>

#include "kernels/softmax.h"
#include "strider/core/dispatch.h"

namespace strider::kernels::ref {

void softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  dispatch_floating(in.dtype(), log ? "log_softmax" : "softmax", [&]<class T>() {
    int64_t outer = 1, inner = 1;
    const int64_t D = in.sizes()[dim];
    for (int64_t d = 0; d < dim; ++d) outer *= in.sizes()[d];
    for (int64_t d = dim + 1; d < in.dim(); ++d) inner *= in.sizes()[d];
    const T* x = static_cast<const T*>(in.data());
    T* y = static_cast<T*>(out.data());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j) {
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int64_t i = 0; i < D; ++i) mx = std::max(mx, double(x[(o * D + i) * inner + j]));
        if (std::isinf(mx) && mx < 0) mx = 0;
        for (int64_t i = 0; i < D; ++i) sum += std::exp(double(x[(o * D + i) * inner + j]) - mx);
        for (int64_t i = 0; i < D; ++i) {
          double v = double(x[(o * D + i) * inner + j]) - mx;
          y[(o * D + i) * inner + j] = static_cast<T>(log ? v - std::log(sum) : std::exp(v) / sum);
        }
      }
  });
}

}  // namespace strider::kernels::ref
