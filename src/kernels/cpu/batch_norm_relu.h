#pragma once
// The ReLU fused into the training batch-norm kernels (BatchNormForward::relu,
// BatchNormBackward::relu_out). The forward stores relu(y) for the normalized y; the backward
// passes the gradient where the stored output is positive, as threshold_backward on the ReLU's
// result does. It does not read that output: it recomputes y from the input with the forward's
// expression on the same float32 operands (mul_add pins where it rounds) and rounds it to the
// stored dtype, so the mask is the stored output's, bit for bit, and the pass reads two tensors
// instead of three.
#include <bit>
#include <cstdint>
#include <type_traits>

#include "kernels/isa_namespace.h"
#include "strider/core/reduced_float.h"

namespace strider::kernels::cpu {
inline namespace STRIDER_ISA_NAMESPACE {

// a * b + c, rounded once where the ISA has FMA and twice where it does not: the compiler may not
// contract it one way in the forward and another in the backward.
inline float mul_add(float a, float b, float c) {
#ifdef __FMA__
  return __builtin_fmaf(a, b, c);
#else
  return a * b + c;
#endif
}

// PyTorch's relu: NaN propagates, -0 becomes 0.
inline float relu_value(float v) { return v > 0.0f ? v : (v != v ? v : 0.0f); }

// Whether v stored as T is positive (bfloat16 rounds the smallest positive floats to 0).
template <class T>
inline bool stored_positive(float v) {
  if constexpr (std::is_same_v<T, BFloat16>)
    return std::bit_cast<float>(static_cast<uint32_t>(BFloat16::round_from_float(v)) << 16) > 0.0f;
  else
    return v > 0.0f;
}

}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels::cpu
