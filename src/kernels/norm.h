#pragma once
// Batch normalization through oneDNN (float32 and bfloat16 data; float32 statistics and
// affine parameters). Input and output share one dense layout (NCHW, NHWC, NCDHW or NDHWC).
#include "strider/core/tensor.h"

namespace strider::kernels::dnnl_ops {

// Training: normalizes with batch statistics and writes them (biased variance) to mean/var.
// Inference: normalizes with the given mean/var. weight/bias may be undefined.
void batch_norm_forward(const Tensor& out, const Tensor& in, const Tensor& weight, const Tensor& bias,
                        const Tensor& mean, const Tensor& var, bool training, double eps);
// grad_weight/grad_bias may be undefined (not needed or no affine parameters).
void batch_norm_backward(const Tensor& grad_in, const Tensor& grad_weight, const Tensor& grad_bias,
                         const Tensor& grad_out, const Tensor& in, const Tensor& weight,
                         const Tensor& mean, const Tensor& var, bool training, double eps);

}  // namespace strider::kernels::dnnl_ops

namespace strider::kernels::dnnl_ops {

// Layer normalization over the last dimension of a contiguous 2-d [rows, n] tensor; mean and
// var ([rows], float32) are written by the forward and read by the backward.
void layer_norm_forward(const Tensor& out, const Tensor& in, const Tensor& weight, const Tensor& bias,
                        const Tensor& mean, const Tensor& var, double eps);
void layer_norm_backward(const Tensor& grad_in, const Tensor& grad_weight, const Tensor& grad_bias,
                         const Tensor& grad_out, const Tensor& in, const Tensor& weight, const Tensor& mean,
                         const Tensor& var, double eps);

}  // namespace strider::kernels::dnnl_ops
