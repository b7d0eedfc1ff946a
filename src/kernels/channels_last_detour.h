#pragma once
// oneDNN 2.6 has no fast kernels for plain-layout (NCHW, NCDHW) convolution and batch
// normalization in bfloat16, nor, below AVX-512, in float32: it runs generic or gemm-based ones
// there, 2-10x slower than in channels-last (ResNet-50's bfloat16 training step spent two thirds
// of its time in plain-layout batch norm; capped at AVX2, a float32 step takes 3x as long in the
// plain layout). Copying the data to channels-last and back costs a few memory passes, far less
// (docs/benchmarks.md). The detour is an implementation-list entry: what the user sees keeps its
// layout, the channels-last tensors are scratch. From AVX-512 up float32 has fast plain-layout
// kernels and stays where it is. Batch norm in training mode, where the copies cost the most
// against the work, has strider's own plain-layout kernel ahead of the detour
// (kernels/cpu/batch_norm_training.cpp).
#include <initializer_list>
#include <string>
#include <vector>

#include "strider/core/tensor.h"

namespace strider::kernels {

// Why the detour does not apply to these data tensors (empty when it does): they must be 4-d or
// 5-d in the plain layout, in a dtype oneDNN computes without fast plain-layout kernels here.
std::string detour_rejects(std::initializer_list<const Tensor*> data);
// Why these tensors are not a batch in the plain layout (4-d or 5-d, dense, not channels-last);
// empty when they are.
std::string plain_batch_rejects(std::initializer_list<const Tensor*> data);
// A channels-last copy of t (scratch from strider's allocator).
Tensor channels_last_copy(const Tensor& t);

// While one is alive on a thread, channels_last_copy of a tensor it has already copied (the same
// data, sizes, strides and dtype) returns that copy: a convolution's backward converts its
// output gradient once for both of its products. The tensors must not change meanwhile.
class ChannelsLastCopyReuse {
 public:
  ChannelsLastCopyReuse();
  ~ChannelsLastCopyReuse();
  ChannelsLastCopyReuse(const ChannelsLastCopyReuse&) = delete;
  ChannelsLastCopyReuse& operator=(const ChannelsLastCopyReuse&) = delete;
  // The copy of t made in this scope, or an undefined tensor.
  Tensor find(const Tensor& t) const;
  void keep(const Tensor& original, const Tensor& copy);

 private:
  std::vector<std::pair<Tensor, Tensor>> copies_;
  ChannelsLastCopyReuse* outer_;
};
// Uninitialized channels-last scratch with t's sizes and dtype (or `dtype`).
Tensor channels_last_empty(const Tensor& t);
Tensor channels_last_empty(const Tensor& t, ScalarType dtype);

}  // namespace strider::kernels
