#pragma once
// A strided bfloat16 convolution's input gradient as stride-1 forward convolutions, one per phase
// of the input, on AMX CPUs. oneDNN 2.6 computes a strided convolution's input gradient with its
// old jit AMX kernel: ResNet-50's three 3x3 stride-2 layers ran at 130-190 GFLOP/s, against
// 550-770 for its brgemm forward convolutions of the same layers (docs/benchmarks.md).
//
// Along one spatial dim with stride s, padding P and kernel size K, input pixel i = s*m + f
// (phase f) receives grad_out[o] * w[k] wherever s*o - P + k = i: k runs over
// k0 = (f + P) mod s, k0 + s, ... (J taps), and the j-th pairs with o = m + q - j, where
// q = (f + P - k0) / s. So phase f of grad_in is a stride-1 correlation of grad_out with those J
// taps in reverse order (input and output channels swapped), padded J - 1 - q before, and its
// output is written into every s-th pixel from f. Every product of the convolution is in exactly
// one phase. Dilation 1 only; where a phase would need negative padding (or has no taps) the
// entry declines.
#include <string>

#include "kernels/conv.h"

namespace strider::kernels {

std::string phase_convolutions_rejects(const ConvBackwardInput& c);
void backward_input_as_phase_convolutions(const ConvBackwardInput& c);

}  // namespace strider::kernels
