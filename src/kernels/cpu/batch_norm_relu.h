#pragma once
// The ReLU fused into the training batch-norm kernels (BatchNormForward::relu,
// BatchNormBackward::relu_out), and the residual added before it (ResNet's block output,
// relu(bn(x) + residual)). The forward stores relu(y) for the normalized y; the backward
// passes the gradient where the stored output is positive, as threshold_backward on the ReLU's
// result does. It does not read that output: it recomputes y from the input with the forward's
// expression on the same float32 operands (mul_add pins where it rounds) and rounds it to the
// stored dtype, so the mask is the stored output's, bit for bit, and the pass reads two tensors
// instead of three. With a residual, the backward writes the ReLU's input gradient (the
// residual's gradient) in its first pass and reads it in its second.
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

// v as it reads back after being stored as T.
template <class T>
inline float rounded(float v) {
  if constexpr (std::is_same_v<T, BFloat16>)
    return std::bit_cast<float>(static_cast<uint32_t>(BFloat16::round_from_float(v)) << 16);
  else
    return v;
}

// Whether v stored as T is positive (bfloat16 rounds the smallest positive floats to 0).
template <class T>
inline bool stored_positive(float v) {
  return rounded<T>(v) > 0.0f;
}

// What the unfused ops compute before the ReLU when a residual is added: the batch norm's output
// y as stored (T), plus the residual, in float32 (the sum is rounded when stored).
template <class T>
inline float plus_residual(float y, T residual) {
  return rounded<T>(y) + static_cast<float>(residual);
}

}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels::cpu
