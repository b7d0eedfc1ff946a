#pragma once
// Copy between any two layouts and dtypes (src already broadcast to dst's shape), and fill.
// The ordered lists: cpu (memcpy, blocked transposes, vectorized loops), then ref.
#include "kernels/implementation_list.h"
#include "strider/core/scalar.h"
#include "strider/core/tensor.h"

namespace strider::kernels {

// Element conversion with PyTorch's semantics (bool is x != 0; 16-bit floats via float32).
template <class TO, class TI>
inline TO convert(TI x) {
  if constexpr (std::is_same_v<TO, bool>) {
    return static_cast<opmath_t<TI>>(x) != opmath_t<TI>(0);
  } else if constexpr (std::is_same_v<TI, bool>) {
    return static_cast<TO>(static_cast<float>(x ? 1.0f : 0.0f));
  } else {
    return static_cast<TO>(static_cast<opmath_t<TI>>(x));
  }
}

struct CopyProblem {
  Tensor dst, src;
};
struct FillProblem {
  Tensor dst;
  Scalar value;
};
const ImplementationList<CopyProblem>& copy_implementations();
const ImplementationList<FillProblem>& fill_implementations();
void copy(const CopyProblem& problem, const Dispatch& d);
void fill(const FillProblem& problem, const Dispatch& d);

namespace cpu {
// dst[i] = convert(src[i]). Same-layout dense copies are one memcpy; layout changes between
// dense tensors (NCHW <-> NHWC and any other permutation) run as a cache-blocked transpose.
void copy(const Tensor& dst, const Tensor& src);
void fill(const Tensor& dst, const Scalar& value);
}  // namespace cpu

namespace ref {
void copy(const Tensor& dst, const Tensor& src);
void fill(const Tensor& dst, const Scalar& value);
}  // namespace ref

}  // namespace strider::kernels
