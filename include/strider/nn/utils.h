#pragma once
// nn utilities: PyTorch's torch.nn.utils memory-format helpers, gradient clipping and the
// parameter <-> vector conversions.
#include <vector>

#include "strider/nn/module.h"

namespace strider::nn::utils {

// For every Conv2d / ConvTranspose2d weight under `module`: clone, make dense in `fmt`, and
// force `fmt`'s formula strides (so a [C,1,k,k] weight really suggests channels-last). Once the
// weights are channels-last, every convolution's output is too.
void convert_conv2d_weight_memory_format(Module& module, MemoryFormat fmt);
// The same for Conv3d / ConvTranspose3d weights (channels_last_3d).
void convert_conv3d_weight_memory_format(Module& module, MemoryFormat fmt);

// Scales gradients so their total `norm_type` norm is at most max_norm; returns the norm before
// clipping, over the gradients these tensors hold in this process (a tensor listed twice counts
// and is scaled once). The norm is PyTorch 1.13's: the norm of the gradients' norms (inf: the
// largest magnitude, -inf: the smallest, 0: how many gradients hold a non-zero). max_norm 0
// zeroes the gradients; a non-finite norm is an Error. FSDP's shards are an Error
// (the norm would be this rank's part only): clip through the wrapper's clip_grad_norm_.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0);
// The total norm of the gradients (no clipping); the same Error for FSDP's shards.
double grad_norm(const std::vector<Tensor>& parameters, double norm_type = 2.0);
// PyTorch's clip_grad_value_: clamps every gradient these tensors hold to [-clip_value,
// clip_value] in place (a negative or NaN clip_value is an Error).
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
// PyTorch's parameters_to_vector: every tensor's elements in logical (row-major) order, one after
// another, in one new 1-d tensor (all tensors must share a dtype).
Tensor parameters_to_vector(const std::vector<Tensor>& parameters);
// PyTorch's vector_to_parameters, copying: each tensor takes its numel elements of `vec` in
// order, in place (its layout and memory kept, so optimizers holding it see the values); `vec`
// must be 1-d and hold exactly as many elements as the tensors together.
void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters);

}  // namespace strider::nn::utils
