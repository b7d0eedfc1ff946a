#pragma once
// Convolution without autograd (strider::conv2d etc. are the differentiable forms).
// Layout rule (SPEC "strider policy"): the output is channels-last (channels-last-3d for 5-d)
// exactly when the input or the weight suggests that format, whatever kernel runs; empty batch
// or channel inputs give a contiguous result. oneDNN runs float32 and bfloat16; other floating
// dtypes use the reference kernel.
#include <array>
#include <tuple>

#include "strider/core/tensor.h"

namespace strider::ops {

struct ConvArgs {
  DimVector stride{1}, padding{0}, dilation{1}, output_padding{0};
  int64_t groups = 1;
  bool transposed = false;
};

// input [N, C, spatial...] (or unbatched [C, spatial...]), weight [Cout, Cin/groups, k...]
// ([Cin, Cout/groups, k...] when transposed); single-value stride/padding/dilation expand.
Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvArgs& args);

// Gradients w.r.t. input, weight and bias; entries of `mask` that are false come back undefined.
std::tuple<Tensor, Tensor, Tensor> convolution_backward(const Tensor& grad_out, const Tensor& input,
                                                        const Tensor& weight, const ConvArgs& args,
                                                        std::array<bool, 3> mask);

// The memory format convolution works in for these operands.
MemoryFormat conv_memory_format(const Tensor& input, const Tensor& weight);

// Bytes of weights kept reordered into oneDNN's preferred layouts. A weight is reordered once
// and reused by forward and backward until its contents change (any in-place op, copy,
// collective or reallocation of its storage; a write through data_ptr() must call
// storage()->bump_generation()); the copies come from strider's allocator, so memory_stats()
// counts them, and go when their weight changes or is freed.
int64_t conv_weight_cache_bytes();

}  // namespace strider::ops
