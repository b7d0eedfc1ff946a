// Reference reduction: for each output element, walk every input element that maps to it.
#include "kernels/reduce.h"
#include "kernels/reduce_accumulate.h"
#include "strider/core/dispatch.h"

namespace strider::kernels {

const char* name(ReduceOp op) {
#define STRIDER_NAME(Enum, function, name, ...) name,
  static const char* names[] = {STRIDER_REDUCE_OPS(STRIDER_NAME)};
#undef STRIDER_NAME
  return names[static_cast<int>(op)];
}

namespace ref {

void reduce(ReduceOp op, const Tensor& out, const Tensor& in, const ReduceArgs& args) {
  const int64_t nd = in.dim();
  DimVector red_dims;
  int64_t length = 1;
  for (int64_t d = 0; d < nd; ++d)
    if (out.strides()[d] == 0 && in.sizes()[d] != 1) {
      red_dims.push_back(d);
      length *= in.sizes()[d];
    }
  dispatch_all(in.dtype(), name(op), [&]<class T>() {
    dispatch_all(out.dtype(), name(op), [&]<class TO>() {
      using Acc = typename Accumulator<T>::Acc;
      const T* ip = static_cast<const T*>(in.data());
      TO* op_base = static_cast<TO*>(out.data());
      // Visit outputs through the keepdim view: one per combination of kept indices.
      const int64_t n_out = length == 0 ? out.numel() : in.numel() / length;
      DimVector idx(nd, 0);
      for (int64_t o = 0; o < n_out; ++o) {
        // Build the kept multi-index for output o (row-major over kept dims).
        int64_t rem = o;
        for (int64_t d = nd - 1; d >= 0; --d) {
          bool reduced = out.strides()[d] == 0 && in.sizes()[d] != 1;
          if (reduced) { idx[d] = 0; continue; }
          idx[d] = rem % in.sizes()[d];
          rem /= in.sizes()[d];
        }
        Accumulator<T> acc(op);
        std::vector<double> values;
        for (int64_t r = 0; r < length; ++r) {
          int64_t rr = r;
          for (auto it = red_dims.rbegin(); it != red_dims.rend(); ++it) {
            idx[*it] = rr % in.sizes()[*it];
            rr /= in.sizes()[*it];
          }
          int64_t off = 0;
          for (int64_t d = 0; d < nd; ++d) off += idx[d] * in.strides()[d];
          Acc v = static_cast<Acc>(static_cast<opmath_t<T>>(ip[off]));
          acc.add(v, r);
          values.push_back(static_cast<double>(v));
        }
        int64_t out_off = 0;
        for (int64_t d = 0; d < nd; ++d) out_off += idx[d] * out.strides()[d];
        double sq = 0;
        if (accumulation(op) == Accumulate::Centered) {
          double mean = static_cast<double>(acc.sum) / static_cast<double>(length);
          for (double v : values) sq += (v - mean) * (v - mean);
        }
        op_base[out_off] = finish<TO>(op, acc, length, sq, args);
      }
    });
  });
}

}  // namespace ref
}  // namespace strider::kernels
