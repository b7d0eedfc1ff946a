#pragma once
// A bfloat16 convolution's backward passes as oneDNN matrix products on AMX CPUs. oneDNN 2.6's
// only AMX kernels for a convolution's backward passes are its older jit ones, which ran
// ResNet-50's 1x1 products 2-6x slower than its brgemm AMX matmul runs the same products, and
// its 3x3 weight gradients with output rows under 16 pixels 1.1-3x slower than an im2col copy
// plus that matmul (docs/benchmarks.md, "The Intel AMX host again"). Without AMX the two run at the same speed, so elsewhere
// these entries decline (conv_list.cpp puts them first).
//
// Over channels-last pixels a convolution is a product with the im2col matrix
// cols[N*OH*OW, KH*KW*Cin], row (n, oh, ow) and column (kh, kw, ci) holding
// in[n, ci, oh * s - p + kh * d, ...] (zero outside): grad_weight as [Cout, KH*KW*Cin] (the
// channels-last weight layout) is grad_out[N*OH*OW, Cout]^T cols, and for a 1x1 unpadded kernel
// grad_in at the pixels the stride reads is grad_out weight[Cout, Cin] (zero elsewhere).
#include <string>

#include "kernels/conv.h"

namespace strider::kernels {

std::string amx_matmul_backward_input_rejects(const ConvBackwardInput& c);
void backward_input_as_matmul(const ConvBackwardInput& c);
std::string amx_matmul_backward_weight_rejects(const ConvBackwardWeight& c);
void backward_weight_as_matmul(const ConvBackwardWeight& c);

}  // namespace strider::kernels
