#pragma once
// oneDNN 2.6 has no fast bfloat16 kernels for plain-layout (NCHW, NCDHW) convolution and batch
// normalization: it runs generic ones there, 2-10x slower than in channels-last (ResNet-50's
// bfloat16 training step spent two thirds of its time in plain-layout batch norm). Copying the
// data to channels-last and back costs a few memory passes, far less (docs/benchmarks.md). The
// detour is an implementation-list entry: what the user sees keeps its layout, the channels-last
// tensors are scratch. Float32 has fast plain-layout kernels and stays where it is.
#include <initializer_list>
#include <string>

#include "strider/core/tensor.h"

namespace strider::kernels {

// Why the detour does not apply to these data tensors (empty when it does): they must be
// bfloat16, 4-d or 5-d, and in the plain layout.
std::string detour_rejects(std::initializer_list<const Tensor*> data);
// A channels-last copy of t (scratch from strider's allocator).
Tensor channels_last_copy(const Tensor& t);
// Uninitialized channels-last scratch with t's sizes and dtype.
Tensor channels_last_empty(const Tensor& t);

}  // namespace strider::kernels
