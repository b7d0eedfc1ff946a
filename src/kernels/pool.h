#pragma once
// Pooling over 2 or 3 spatial dims. Ordered implementation lists: oneDNN for plain max/average
// windows in float32/bfloat16 (max pooling keeps a oneDNN workspace for backward; bfloat16 in
// float32 where the CPU has no oneDNN bfloat16 kernels; max pooling of an input holding NaN or
// -inf, or with a window wholly in the padding, is left to the reference, as oneDNN would drop
// NaN and start from float's lowest), then the
// reference (float64, ceil windows counted PyTorch's way, divisor_override, return_indices, and
// the tests' oracle) with PyTorch-style int64 indices (flat within each image's spatial volume).
// Adaptive windows have the reference only.
#include "kernels/implementation_list.h"
#include "strider/core/tensor.h"

namespace strider::kernels {

struct PoolParams {
  DimVector kernel, stride, padding, dilation;
  bool is_max = true;
  bool ceil_mode = false;
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // 0 = none
};

// What a forward leaves for its backward: PyTorch's indices (reference max pooling, laid out
// like the output) or oneDNN's workspace.
struct PoolSaved {
  Tensor indices, workspace;
};

// out and in share one dense layout (NCHW, NHWC, NCDHW or NDHWC).
struct PoolForward {
  Tensor out, in;
  PoolParams p;
  bool with_indices = false;  // the caller wants PyTorch's indices (return_indices)
  PoolSaved* saved = nullptr;  // filled by the implementation that runs
};
// grad_in and grad_out share one dense layout; saved is the forward's.
struct PoolBackward {
  Tensor grad_in, grad_out;
  PoolParams p;
  PoolSaved saved;
};
// Adaptive windows: start = floor(o*I/O), end = ceil((o+1)*I/O). indices (int64, out's shape and
// layout) is written for max pooling.
struct AdaptivePoolForward {
  Tensor out, indices, in;
  bool is_max = false;
};
struct AdaptivePoolBackward {
  Tensor grad_in, grad_out, indices;
  bool is_max = false;
};

const ImplementationList<PoolForward>& pool_forward_implementations();
const ImplementationList<PoolBackward>& pool_backward_implementations();
const ImplementationList<AdaptivePoolForward>& adaptive_pool_forward_implementations();
const ImplementationList<AdaptivePoolBackward>& adaptive_pool_backward_implementations();

void pool_forward(const PoolForward& problem, const Dispatch& d);
void pool_backward(const PoolBackward& problem, const Dispatch& d);
void adaptive_pool_forward(const AdaptivePoolForward& problem, const Dispatch& d);
void adaptive_pool_backward(const AdaptivePoolBackward& problem, const Dispatch& d);

namespace dnnl_ops {
void pool_forward(const PoolForward& p);
void pool_backward(const PoolBackward& p);
}  // namespace dnnl_ops

namespace ref {
// indices (int64, same shape as out) is written for max pooling when defined.
void pool_forward(const Tensor& out, const Tensor& indices, const Tensor& in, const PoolParams& p);
// grad_in must be zero-filled by the caller.
void pool_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& indices, const PoolParams& p);
void adaptive_pool_forward(const Tensor& out, const Tensor& indices, const Tensor& in, bool is_max);
// grad_in must be zero-filled by the caller.
void adaptive_pool_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& indices, bool is_max);
}  // namespace ref

}  // namespace strider::kernels
