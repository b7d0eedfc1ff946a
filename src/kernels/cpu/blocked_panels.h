#pragma once
// A plain 2-d matrix B[k][n] copied into the blocked layout oneDNN's brgemm matmuls take their
// right operand in: blocks of `row_block` rows by `col_block` columns, each block contiguous and
// row-major, except that bfloat16 keeps its rows in pairs (element (k, n) of a block at
// ((k / 2) col_block + n) 2 + k % 2, "VNNI", what vdpbf16ps and the AMX tiles read). oneDNN calls
// these BA16a64b (float32) and BA16a64b2a (bfloat16). Its 2.6 reorder into them is generic and
// runs 1.4-3x slower than these AVX-512 interleaves and register transposes for bfloat16
// (docs/benchmarks.md); both produce the same bytes, padding included (kernels tests).
#include <cstdint>
#include <string>

namespace strider::kernels::cpu {

struct BlockedPanels {
  int64_t rows = 0, cols = 0;                          // k and n of the matrix
  int64_t row_block = 0, col_block = 0;                // 16 rows (float32) or 32 (bfloat16's 16 pairs); columns
  int64_t row_block_stride = 0, col_block_stride = 0;  // elements from one block to the next
  int element_size = 0;                                // 4: float32; 2: bfloat16, rows in pairs
};

// Why pack_blocked cannot copy a source with these strides (in elements) into `to`; empty when it
// can: row-major sources of either type, and bfloat16 sources whose rows are contiguous pairs
// (a transposed row-major matrix, even row count apart), on a CPU with AVX-512; the blocks must
// tile the matrix without overlapping.
std::string pack_blocked_rejects(const BlockedPanels& to, int64_t row_stride, int64_t col_stride);
// Copies `src` (element (k, n) at k row_stride + n col_stride) into `dst` in the layout `to`, zeros
// in the padding of the last blocks. Threads over blocks.
void pack_blocked(const void* src, int64_t row_stride, int64_t col_stride, const BlockedPanels& to, void* dst);

}  // namespace strider::kernels::cpu
