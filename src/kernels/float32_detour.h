#pragma once
// oneDNN 2.6 has bfloat16 convolution, matmul, normalization and pooling only from AVX-512 up;
// below it (AVX2 CPUs, or STRIDER_MAX_CPU_ISA=avx2) its primitives for bfloat16 cannot be
// created. There bfloat16 data takes this detour: the operands are widened to float32 (exact),
// oneDNN's float32 primitive runs, and each output is rounded to bfloat16 once, where the native
// kernels round too (they accumulate in float32 and round the result). An implementation-list
// entry after native oneDNN, so it runs only where that rejects; the tensors in float32 are
// scratch, in the same layout as the user's.
#include <initializer_list>
#include <string>

#include "strider/core/tensor.h"

namespace strider::kernels {

// True when oneDNN has bfloat16 kernels for this CPU (after STRIDER_MAX_CPU_ISA): the native
// entries then run bfloat16 and the detour is only reached by tests.
bool onednn_has_bfloat16();
// Why the detour does not apply to this data (empty when it does): it must be bfloat16.
std::string float32_detour_rejects(std::initializer_list<const Tensor*> data);
// t in float32 with t's sizes and strides; undefined and float32 tensors pass through as they are.
// With `channels_last` (for data whose plain layout oneDNN computes slowly: channels_last_detour.h)
// the float32 copy is channels-last instead.
Tensor float32_copy(const Tensor& t, bool channels_last = false);
// Uninitialized float32 scratch with t's sizes and strides, or channels-last (undefined stays
// undefined).
Tensor float32_empty(const Tensor& t, bool channels_last = false);
// Rounds `computed` into `dst` when they are different tensors (nothing when dst is undefined).
void round_into(const Tensor& dst, const Tensor& computed);

}  // namespace strider::kernels
