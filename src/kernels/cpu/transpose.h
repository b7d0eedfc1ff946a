#pragma once
// Batched 2-d transpose of 32-bit or 16-bit elements: out[b * out_stride + a] = in[a * in_stride + b]
// for a < A, b < B. The layout-changing copy (NCHW <-> NHWC) is one of these per image.
#include <cstdint>

namespace strider::kernels::cpu {

// Transposes the block a in [a0, a1), b in [b0, b1). `stream` uses non-temporal stores (for
// destinations far larger than the caches); the caller fences after the parallel region.
void transpose_block_32bit(const uint32_t* in, int64_t in_stride, uint32_t* out, int64_t out_stride,
                           int64_t a0, int64_t a1, int64_t b0, int64_t b1, bool stream);
void transpose_block_16bit(const uint16_t* in, int64_t in_stride, uint16_t* out, int64_t out_stride,
                           int64_t a0, int64_t a1, int64_t b0, int64_t b1, bool stream = false);
void store_fence();

}  // namespace strider::kernels::cpu
