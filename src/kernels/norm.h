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
