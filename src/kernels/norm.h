#pragma once
// Batch and layer normalization. Each computation has an ordered implementation list: for
// evaluation-mode batch norm a one-pass cpu kernel first, for training-mode batch norm of a
// float32 or bfloat16 batch strider's own kernels, one per layout (plain, channels-last); oneDNN
// (float32 and bfloat16 data, plain-layout bfloat16 via channels-last; bfloat16 in float32 where
// the CPU has no oneDNN bfloat16 kernels); then the reference (any floating dtype, float64 accumulation; the
// oracle). Statistics and affine parameters are float32, float64 for float64 data
// (norm_stat_dtype); the ops layer converts them and decides every layout.
#include <initializer_list>
#include <string>

#include "kernels/implementation_list.h"
#include "strider/core/tensor.h"

namespace strider::kernels {

// The dtype of mean, var, weight and bias (and their gradients) for data of dtype `data`.
inline ScalarType norm_stat_dtype(ScalarType data) { return data == kDouble ? kDouble : kFloat; }

// Over dims 0 and 2.. of in ([N, C, ...], 2 to 5 dims), per channel. Training writes the batch
// mean and biased variance to mean/var; evaluation reads them. weight/bias may be undefined.
// residual (in's shape, dtype and strides) defined: it is added to the normalized batch, as an
// add of the stored batch-norm output would (ResNet's block output). relu: out is relu of that.
// strider's training kernels fuse both; the other implementations apply them after.
struct BatchNormForward {
  Tensor out, in, weight, bias, mean, var;
  bool training = true;
  double eps = 1e-5;
  bool relu = false;
  Tensor residual;
};
// grad_weight/grad_bias may be undefined (not wanted, or no affine parameters). relu_out defined:
// the forward had relu set and this is its output (all data tensors have in's shape); grad_out is
// the ReLU's output gradient, passed where relu_out is positive. relu_out_by names the forward
// implementation that computed relu_out: in that one entry, a training kernel, the backward
// recomputes the mask from `in`, `bias` and `residual` instead of reading it. grad_residual
// (only with relu_out, when the forward added a residual) receives the masked gradient (the
// residual's gradient); residual comes with it where the mask is recomputed, and may be left
// undefined where it is read.
struct BatchNormBackward {
  Tensor grad_in, grad_weight, grad_bias, grad_out, in, weight, mean, var;
  bool training = true;
  double eps = 1e-5;
  Tensor relu_out, bias, residual, grad_residual;
  const char* relu_out_by = nullptr;
};
// Over the last dim of a 2-d [rows, n] in; mean/var ([rows]) written by the forward.
struct LayerNormForward {
  Tensor out, in, weight, bias, mean, var;
  double eps = 1e-5;
};
struct LayerNormBackward {
  Tensor grad_in, grad_weight, grad_bias, grad_out, in, weight, mean, var;
  double eps = 1e-5;
};

const ImplementationList<BatchNormForward>& batch_norm_forward_implementations();
const ImplementationList<BatchNormBackward>& batch_norm_backward_implementations();
const ImplementationList<LayerNormForward>& layer_norm_forward_implementations();
const ImplementationList<LayerNormBackward>& layer_norm_backward_implementations();

// Returns the name of the implementation that ran (BatchNormBackward::relu_out_by).
const char* batch_norm_forward(const BatchNormForward& problem, const Dispatch& d);
// Whether the backward recomputes a fused ReLU's mask from the input (and the residual) when the
// forward ran in `forward_by`, instead of reading relu_out.
bool batch_norm_backward_recomputes_relu_mask(const char* forward_by);
void batch_norm_backward(const BatchNormBackward& problem, const Dispatch& d);
void layer_norm_forward(const LayerNormForward& problem, const Dispatch& d);
void layer_norm_backward(const LayerNormBackward& problem, const Dispatch& d);

namespace cpu {
// Evaluation mode only (a per-channel affine pass), float32/bfloat16, plain or channels-last.
std::string batch_norm_inference_rejects(const BatchNormForward& p);
void batch_norm_inference(const BatchNormForward& p);
// Training mode on float32/bfloat16 batches in one layout, plain (where oneDNN is slow) or
// channels-last (rows of C channels: NLC-strided, NHWC, NDHWC). `data` are the batch-shaped
// tensors, `stats` the per-channel ones (undefined ones are skipped).
enum class BatchLayout { plain, channels_last };
std::string batch_norm_training_rejects(BatchLayout layout, const Tensor& in, std::initializer_list<const Tensor*> data,
                                        std::initializer_list<const Tensor*> stats, bool training);
void batch_norm_training_forward(const BatchNormForward& p);
void batch_norm_training_backward(const BatchNormBackward& p);
void batch_norm_channels_last_forward(const BatchNormForward& p);
void batch_norm_channels_last_backward(const BatchNormBackward& p);
}  // namespace cpu

namespace dnnl_ops {
void batch_norm_forward(const BatchNormForward& p);
void batch_norm_backward(const BatchNormBackward& p);
void layer_norm_forward(const LayerNormForward& p);
void layer_norm_backward(const LayerNormBackward& p);
}  // namespace dnnl_ops

namespace ref {
void batch_norm_forward(const BatchNormForward& p);
void batch_norm_backward(const BatchNormBackward& p);
void layer_norm_forward(const LayerNormForward& p);
void layer_norm_backward(const LayerNormBackward& p);
}  // namespace ref

}  // namespace strider::kernels
