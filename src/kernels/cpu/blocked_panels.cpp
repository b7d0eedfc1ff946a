// One block at a time: whole blocks with AVX-512 (a row-major source's bfloat16 row pairs
// interleaved by one permute per 16 columns, float32 rows copied; a transposed bfloat16 source's
// pairs moved as 32-bit elements through 16 x 16 register transposes), blocks the matrix ends
// inside element by element with zeros past its edge.
#include "kernels/cpu/blocked_panels.h"

// GCC 12's AVX-512 intrinsics pass a self-initialized "undefined" vector as the unused merge
// source, which its uninitialized-use warnings report once inlined (as in kernels/cpu/adam.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu_isa.h"
#include "kernels/parallel.h"
#include "strider/core/error.h"

namespace strider::kernels::cpu {
namespace {

#define STRIDER_AVX512 __attribute__((target("avx512f,avx512bw")))

int64_t blocks_along(int64_t extent, int64_t block) { return (extent + block - 1) / block; }

// Element (kk, nn) of a block, in elements from its start.
int64_t offset_in_block(const BlockedPanels& to, int64_t kk, int64_t nn) {
  if (to.element_size == 2) return ((kk / 2) * to.col_block + nn) * 2 + kk % 2;
  return kk * to.col_block + nn;
}

// A block the matrix ends inside: element by element, zeros outside the matrix.
void edge_block(const char* src, int64_t row_stride, int64_t col_stride, const BlockedPanels& to, char* block,
                int64_t k0, int64_t n0) {
  const int64_t size = to.element_size;
  for (int64_t kk = 0; kk < to.row_block; ++kk)
    for (int64_t nn = 0; nn < to.col_block; ++nn) {
      const int64_t k = k0 + kk, n = n0 + nn;
      char* d = block + offset_in_block(to, kk, nn) * size;
      if (k < to.rows && n < to.cols)
        std::memcpy(d, src + (k * row_stride + n * col_stride) * size, size);
      else
        std::memset(d, 0, size);
    }
}

// out row i (16 32-bit elements, out_stride bytes apart) = column i of the 16 rows at in
// (in_stride bytes apart). Byte addresses: a bfloat16 pair may start at any even byte.
STRIDER_AVX512 inline void transpose16x16_avx512(const char* in, int64_t in_stride, char* out, int64_t out_stride) {
  __m512i r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(in + i * in_stride);
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i + 0], t[4 * i + 2]);
    r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i + 0], t[4 * i + 2]);
    r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  // Each 128-bit lane now holds a 4 x 4 piece; two lane shuffles put the pieces in place.
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      t[8 * i + j] = _mm512_shuffle_i32x4(r[8 * i + j], r[8 * i + 4 + j], 0x88);
      t[8 * i + 4 + j] = _mm512_shuffle_i32x4(r[8 * i + j], r[8 * i + 4 + j], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_i32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_i32x4(t[j], t[8 + j], 0xdd);
  }
  for (int i = 0; i < 16; ++i) _mm512_storeu_si512(out + i * out_stride, r[i]);
}

// Row-major bfloat16: rows k and k + 1, 16 columns each, become 16 pairs by one permute.
STRIDER_AVX512 void rows_in_pairs_avx512(const uint16_t* src, int64_t row_stride, const BlockedPanels& to,
                                         uint16_t* block) {
  alignas(64) static constexpr uint16_t kInterleave[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,
                                                           21, 6, 22, 7, 23, 8,  24, 9,  25, 10, 26,
                                                           11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i interleave = _mm512_load_si512(kInterleave);
  for (int64_t kp = 0; kp < to.row_block / 2; ++kp) {
    const uint16_t* even = src + 2 * kp * row_stride;
    const uint16_t* odd = even + row_stride;
    for (int64_t n = 0; n < to.col_block; n += 16) {
      const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(even + n));
      const __m256i o = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(odd + n));
      const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(e), o, 1);
      _mm512_storeu_si512(block + (kp * to.col_block + n) * 2, _mm512_permutexvar_epi16(interleave, both));
    }
  }
}

// Transposed bfloat16 (k contiguous): each pair (k, k + 1) of column n is one 32-bit element.
STRIDER_AVX512 void pairs_transposed_avx512(const char* src, int64_t col_stride, const BlockedPanels& to,
                                            char* block) {
  for (int64_t kp = 0; kp < to.row_block / 2; kp += 16)
    for (int64_t n = 0; n < to.col_block; n += 16)
      transpose16x16_avx512(src + (n * col_stride + 2 * kp) * 2, col_stride * 2, block + (kp * to.col_block + n) * 4,
                            to.col_block * 4);
}

}  // namespace

std::string pack_blocked_rejects(const BlockedPanels& to, int64_t row_stride, int64_t col_stride) {
  if (!cpu_has(Isa::avx512)) return "packing into oneDNN's blocked layouts here needs AVX-512";
  if (to.rows <= 0 || to.cols <= 0) return "an empty matrix";
  const int64_t want_rows = to.element_size == 4 ? 16 : to.element_size == 2 ? 32 : 0;
  if (to.row_block != want_rows || to.col_block <= 0 || to.col_block % 16 != 0)
    return detail::str("blocks of ", to.row_block, " x ", to.col_block, " for ", to.element_size,
                       "-byte elements (16 x 16k for float32, 32 x 16k for bfloat16 pairs)");
  const int64_t block = to.row_block * to.col_block;
  const int64_t row_blocks = blocks_along(to.rows, to.row_block), col_blocks = blocks_along(to.cols, to.col_block);
  const bool columns_outer = to.row_block_stride == block && to.col_block_stride == row_blocks * block;
  const bool rows_outer = to.col_block_stride == block && to.row_block_stride == col_blocks * block;
  if (!columns_outer && !rows_outer)
    return detail::str("block strides ", to.row_block_stride, ", ", to.col_block_stride, " do not tile ",
                       row_blocks, " x ", col_blocks, " blocks");
  if (col_stride == 1) return "";
  if (to.element_size == 2 && row_stride == 1 && col_stride % 2 == 0) return "";
  return detail::str("a source with strides ", row_stride, ", ", col_stride,
                     " (row-major, or bfloat16 transposed with an even column stride)");
}

void pack_blocked(const void* src, int64_t row_stride, int64_t col_stride, const BlockedPanels& to, void* dst) {
  const int64_t row_blocks = blocks_along(to.rows, to.row_block), col_blocks = blocks_along(to.cols, to.col_block);
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  const int64_t size = to.element_size;
  parallel_for(0, row_blocks * col_blocks, 16, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t kb = b % row_blocks, nb = b / row_blocks;
      const int64_t k0 = kb * to.row_block, n0 = nb * to.col_block;
      char* block = d + (kb * to.row_block_stride + nb * to.col_block_stride) * size;
      const char* origin = s + (k0 * row_stride + n0 * col_stride) * size;
      if (k0 + to.row_block > to.rows || n0 + to.col_block > to.cols) {
        edge_block(s, row_stride, col_stride, to, block, k0, n0);
      } else if (size == 4) {
        for (int64_t kk = 0; kk < to.row_block; ++kk)
          std::memcpy(block + kk * to.col_block * 4, origin + kk * row_stride * 4, to.col_block * 4);
      } else if (col_stride == 1) {
        rows_in_pairs_avx512(reinterpret_cast<const uint16_t*>(origin), row_stride, to,
                             reinterpret_cast<uint16_t*>(block));
      } else {
        pairs_transposed_avx512(origin, col_stride, to, block);
      }
    }
  });
}

#undef STRIDER_AVX512

}  // namespace strider::kernels::cpu
