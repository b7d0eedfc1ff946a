#pragma once
// Reading and writing a per-channel statistic or affine parameter (float32, any stride; undefined
// means absent) for the training batch-norm kernels of both layouts.
#include <cstdint>

#include "kernels/isa_namespace.h"
#include "strider/core/tensor.h"

namespace strider::kernels::cpu {
inline namespace STRIDER_ISA_NAMESPACE {

inline float channel_stat(const Tensor& t, int64_t c, float absent) {
  return t.defined() ? static_cast<const float*>(t.data())[c * t.strides()[0]] : absent;
}
inline void set_channel_stat(const Tensor& t, int64_t c, double v) {
  if (t.defined()) static_cast<float*>(t.data())[c * t.strides()[0]] = static_cast<float>(v);
}

}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels::cpu
