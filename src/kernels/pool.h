#pragma once
// Pooling over 2 or 3 spatial dims. dnnl:: for the plain max/avg windows (float32, bfloat16;
// max pooling keeps a oneDNN workspace for backward); ref:: for everything else (float64, ceil
// windows counted PyTorch's way, adaptive windows) and as the test oracle, with PyTorch-style
// int64 indices (flat within each image's spatial volume).
#include "strider/core/tensor.h"

namespace strider::kernels {

struct PoolParams {
  DimVector kernel, stride, padding, dilation;
  bool is_max = true;
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // 0 = none
};

namespace dnnl_ops {
// Bytes of workspace max pooling needs for backward (0 for average pooling).
int64_t pool_workspace_bytes(const Tensor& out, const Tensor& in, const PoolParams& p);
void pool_forward(const Tensor& out, const Tensor& in, const PoolParams& p, const Tensor& workspace);
void pool_backward(const Tensor& grad_in, const Tensor& grad_out, const PoolParams& p, const Tensor& workspace);
}  // namespace dnnl_ops

namespace ref {
// indices (int64, same shape as out) is written for max pooling when defined.
void pool_forward(const Tensor& out, const Tensor& indices, const Tensor& in, const PoolParams& p);
// grad_in must be zero-filled by the caller.
void pool_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& indices, const PoolParams& p);
// Adaptive windows: start = floor(o*I/O), end = ceil((o+1)*I/O).
void adaptive_pool_forward(const Tensor& out, const Tensor& indices, const Tensor& in, bool is_max);
void adaptive_pool_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& indices, bool is_max);
}  // namespace ref

}  // namespace strider::kernels
