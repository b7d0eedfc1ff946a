// Blocked attention (kernels/attention.h). Each head's operands are first copied into panels laid
// out for the block products (K and V once per head, transposed where a product needs them that
// way), then every block product runs on one register-tiled micro-kernel: float32 panels
// (block_gemm_f32.h), or for bfloat16 storage, bfloat16 panels: on AMX's tiles where the CPU has
// them (block_gemm_amx.h), else on vdpbf16ps where that runs at twice the FMA's rate
// (block_gemm_bf16.h), with the probabilities and score gradients rounded to bfloat16 for the
// products that take them, as FlashAttention-2 does for 16-bit inputs. The softmax, the running
// statistics and every accumulator stay float32.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/attention.h"
#include "kernels/cpu/attention_rows.h"
#include "kernels/cpu/block_gemm_amx.h"
#include "kernels/cpu/block_gemm_bf16.h"
#include "kernels/cpu/block_gemm_f32.h"
#include "kernels/cpu/kernel_tables.h"
#include "kernels/cpu/transpose.h"
#include "kernels/cpu_isa.h"
#include "kernels/isa_namespace.h"
#include "kernels/parallel.h"
#include "kernels/scratch.h"
#include "strider/core/dispatch.h"

namespace strider::kernels::cpu {
inline namespace STRIDER_ISA_NAMESPACE {
namespace {

// Query and key rows per block: a 64 x 64 float tile is 16 KiB and stays in L1 next to the rows
// of the operands it meets.
constexpr int64_t kBlock = 64;
constexpr int64_t kLanes = 16;  // floats per AVX-512 register (two AVX2 ones); panels pad columns to a multiple

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// Columns of a panel whose columns are rows of the sequence (keys or queries transposed): one
// vector more than the padded length, so the rows a block product walks down are not a power of
// two apart (at 256 columns they were 1 KiB apart and fell into the same few L1 sets).
int64_t column_panel_width(int64_t padded_length) { return padded_length + kLanes; }

// dst[d] = T(row[d] * scale), d < D.
template <class T>
void store_row(const float* row, float scale, int64_t D, T* dst) {
#pragma omp simd
  for (int64_t d = 0; d < D; ++d) dst[d] = static_cast<T>(row[d] * scale);
}

// How block products take their operands. A panels are row-major; a B panel of `ld` columns keeps
// kPair consecutive k-steps of a column together: element (p, j) at
// (p / kPair) * kPair * ld + j * kPair + p % kPair, so rows p0 (a multiple of kPair) and columns j0
// start at p0 * ld + j0 * kPair. A Scope lives on each thread while it runs products.
struct NoScope {};

struct Float32Products {
  using E = float;
  using Scope = NoScope;
  static constexpr int64_t kPair = 1;
  // Head columns are padded with zeros to a multiple of this (the products' k-steps over them).
  static constexpr int64_t kHeadPadding = kLanes;
  template <class T>
  static E from(T x) {
    return static_cast<float>(x);
  }
  static void gemm(int64_t m, int64_t n, int64_t k, const E* a, int64_t lda, const E* b, int64_t ldb, float* c,
                   int64_t ldc, bool accumulate) {
    block_gemm_f32(m, n, k, a, lda, b, ldb, c, ldc, accumulate);
  }
  // A float tile's rows [0, m) x columns [0, n) as an A or a B operand: the tile itself.
  static const E* tile_as_a(const float* t, int64_t, int64_t, E*) { return t; }
  static const E* tile_as_b(const float* t, int64_t, int64_t, E*) { return t; }
  // A result row into the output.
  template <class T>
  static void store(const float* row, float scale, int64_t D, T* dst) {
    store_row(row, scale, D, dst);
  }
};

struct BFloat16Products {
  using E = uint16_t;  // bfloat16 bits
  using Scope = NoScope;
  static constexpr int64_t kPair = 2;
  static constexpr int64_t kHeadPadding = kLanes;
  static E from(BFloat16 x) { return x.bits; }
  static void gemm(int64_t m, int64_t n, int64_t k, const E* a, int64_t lda, const E* b, int64_t ldb, float* c,
                   int64_t ldc, bool accumulate) {
    block_gemm_bf16_avx512(m, n, k, a, lda, b, ldb, c, ldc, accumulate);
  }
  // Tiles (kBlock columns; n a multiple of kLanes) rounded into `scratch` of kBlock x kBlock.
  static const E* tile_as_a(const float* t, int64_t m, int64_t n, E* scratch) {
    round_rows_avx512(t, kBlock, m, n, scratch, kBlock);
    return scratch;
  }
  static const E* tile_as_b(const float* t, int64_t k, int64_t n, E* scratch) {
    round_row_pairs_avx512(t, kBlock, k, n, scratch, kBlock);
    return scratch;
  }
  static void store(const float* row, float scale, int64_t D, BFloat16* dst) {
    round_scaled_avx512(row, scale, D, reinterpret_cast<uint16_t*>(dst));
  }
};

// The same panels and roundings, the products on the tiles.
struct AmxProducts : BFloat16Products {
  using Scope = AmxTiles;
  static constexpr int64_t kHeadPadding = 32;  // a tile's k-steps: no score product falls to vdpbf16ps
  static void gemm(int64_t m, int64_t n, int64_t k, const E* a, int64_t lda, const E* b, int64_t ldb, float* c,
                   int64_t ldc, bool accumulate) {
    block_gemm_amx_avx512(m, n, k, a, lda, b, ldb, c, ldc, accumulate);
  }
};

// One head of a [B, H, rows, D] tensor: element (r, d) at data[r * row_stride + d].
template <class T>
struct Head {
  T* data;
  int64_t row_stride;
};

template <class T>
Head<T> head_of(const Tensor& t, int64_t b, int64_t h) {
  auto* base = static_cast<T*>(t.data());
  return {base + b * t.strides()[0] + h * t.strides()[1], t.strides()[2]};
}

// The rows [r0, r0 + n) of a head (columns [0, D)) into a panel, where element (r, d) goes:
// A rows (r, d), A columns (d, r), B rows (k-step r, column d), B columns (k-step d, column r).
enum class PanelOf { a_rows, a_columns, b_rows, b_columns };

// Whether rows of D elements from `first`, row_stride apart, can be read as 32-bit words (pairs of
// bfloat16 along d).
template <class T>
bool words_aligned(const T* first, int64_t row_stride, int64_t D) {
  return sizeof(T) == 4 || (D % 2 == 0 && row_stride % 2 == 0 && reinterpret_cast<uintptr_t>(first) % 4 == 0);
}

template <class P, PanelOf kind, class T>
void load(Head<const T> src, int64_t r0, int64_t n, int64_t D, typename P::E* panel, int64_t ld) {
  using E = typename P::E;
  constexpr int64_t q = P::kPair;
  constexpr bool same_bits = sizeof(E) == sizeof(T) && (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>);
  const T* first = src.data + r0 * src.row_stride;
  if constexpr (same_bits) {
    // The element bits as they are: rows copied, transposes by machine words.
    if constexpr (kind == PanelOf::a_rows || (kind == PanelOf::b_rows && q == 1)) {
      for (int64_t r = 0; r < n; ++r) std::memcpy(panel + r * ld, first + r * src.row_stride, D * sizeof(E));
      return;
    } else if constexpr (kind == PanelOf::b_rows) {  // pairs of rows interleaved
      for (int64_t r = 0; r < n; r += 2) {
        const auto* even = reinterpret_cast<const uint16_t*>(first + r * src.row_stride);
        interleave_row_pairs_avx512(even, r + 1 < n ? even + src.row_stride : nullptr, D, panel + r * ld);
      }
      return;
    } else if constexpr (kind == PanelOf::a_columns && q == 2) {
      transpose_block_16bit(reinterpret_cast<const uint16_t*>(first), src.row_stride, panel, ld, 0, n, 0, D);
      return;
    } else {  // float columns (A or B), or bfloat16 B columns: a transpose of 32-bit words
      if (words_aligned(first, src.row_stride, D)) {
        transpose_block_32bit(reinterpret_cast<const uint32_t*>(first), src.row_stride * sizeof(T) / 4,
                              reinterpret_cast<uint32_t*>(panel), ld, 0, n, 0, D * sizeof(T) / 4, false);
        return;
      }
    }
  }
  for (int64_t r = 0; r < n; ++r) {
    const T* s = first + r * src.row_stride;
    if constexpr (kind == PanelOf::a_rows) {
      E* dst = panel + r * ld;
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) dst[d] = P::from(s[d]);
    } else if constexpr (kind == PanelOf::a_columns) {
      for (int64_t d = 0; d < D; ++d) panel[d * ld + r] = P::from(s[d]);
    } else if constexpr (kind == PanelOf::b_rows) {
      E* dst = panel + (r / q) * q * ld + r % q;
      for (int64_t d = 0; d < D; ++d) dst[d * q] = P::from(s[d]);
    } else {
      for (int64_t d = 0; d < D; ++d) panel[(d / q) * q * ld + r * q + d % q] = P::from(s[d]);
    }
  }
}

// Zero-filled panels from the allocator; the padding (columns past D, rows past the sequence) is
// never written with data (at most with zeros), so products over it add nothing.
template <class E>
struct Panels {
  Tensor bytes;
  E* base;
  explicit Panels(int64_t elements)
      : bytes(scratch_bytes(elements * static_cast<int64_t>(sizeof(E)))), base(static_cast<E*>(bytes.data())) {
    std::fill(base, base + elements, E{0});
  }
};

template <class T, class P>
void forward_typed(const AttentionForward& p) {
  using E = typename P::E;
  const int64_t B = p.q.sizes()[0], H = p.q.sizes()[1], L = p.q.sizes()[2], D = p.q.sizes()[3], S = p.k.sizes()[2];
  const int64_t Dp = round_up(D, P::kHeadPadding), Sp = round_up(S, kBlock), Sc = column_panel_width(Sp);
  const float scale = static_cast<float>(p.scale);
  auto* lse = static_cast<float*>(p.lse.data());
  parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
    [[maybe_unused]] const typename P::Scope products_scope;
    // Operands: keys as B columns [Dp][Sc], values as B rows [Sp][Dp], a query block [kBlock][Dp],
    // the probabilities as an A operand [kBlock][kBlock]. Float: scores [kBlock][kBlock] and the
    // output block [kBlock][Dp].
    Panels<E> operands(Dp * Sc + Sp * Dp + kBlock * Dp + kBlock * kBlock);
    E* kt = operands.base;
    E* vp = kt + Dp * Sc;
    E* qb = vp + Sp * Dp;
    E* pa = qb + kBlock * Dp;
    Panels<float> floats(kBlock * Dp + kBlock * kBlock);
    float* ob = floats.base;
    float* sb = ob + kBlock * Dp;
    float row_max[kBlock], row_sum[kBlock];
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      const Head<const T> q = head_of<const T>(p.q, b, h), k = head_of<const T>(p.k, b, h);
      const Head<const T> v = head_of<const T>(p.v, b, h);
      const Head<T> out = head_of<T>(p.out, b, h);
      load<P, PanelOf::b_columns>(k, 0, S, D, kt, Sc);
      load<P, PanelOf::b_rows>(v, 0, S, D, vp, Dp);
      for (int64_t i0 = 0; i0 < L; i0 += kBlock) {
        const int64_t br = std::min(kBlock, L - i0);
        load<P, PanelOf::a_rows>(q, i0, br, D, qb, Dp);
        std::fill(ob, ob + br * Dp, 0.0f);
        std::fill(row_max, row_max + br, -std::numeric_limits<float>::infinity());
        std::fill(row_sum, row_sum + br, 0.0f);
        const int64_t key_end = p.causal ? std::min(S, i0 + br) : S;
        for (int64_t j0 = 0; j0 < key_end; j0 += kBlock) {
          const int64_t bc = std::min(kBlock, S - j0), nc = round_up(bc, kLanes);
          P::gemm(br, nc, Dp, qb, Dp, kt + j0 * P::kPair, Sc, sb, kBlock, false);
          for (int64_t r = 0; r < br; ++r) {
            float* row = sb + r * kBlock;
            const int64_t visible = p.causal ? std::min(bc, i0 + r - j0 + 1) : bc;
            if (visible <= 0) {
              std::fill(row, row + nc, 0.0f);
              continue;
            }
            const float alpha =
                attention_rows::online_softmax_row(row, nc, visible, scale, row_max[r], row_sum[r]);
            if (alpha != 1.0f) {
              float* o = ob + r * Dp;
#pragma omp simd
              for (int64_t d = 0; d < Dp; ++d) o[d] *= alpha;
            }
          }
          P::gemm(br, Dp, bc, P::tile_as_a(sb, br, nc, pa), kBlock, vp + j0 * Dp, Dp, ob, Dp, true);
        }
        for (int64_t r = 0; r < br; ++r) {
          P::store(ob + r * Dp, 1.0f / row_sum[r], D, out.data + (i0 + r) * out.row_stride);
          lse[bh * L + i0 + r] = row_max[r] + std::log(row_sum[r]);
        }
      }
    }
  });
}

template <class T, class P>
void backward_typed(const AttentionBackward& p) {
  using E = typename P::E;
  const int64_t B = p.q.sizes()[0], H = p.q.sizes()[1], L = p.q.sizes()[2], D = p.q.sizes()[3], S = p.k.sizes()[2];
  const int64_t Dp = round_up(D, P::kHeadPadding), Lp = round_up(L, kBlock), Sp = round_up(S, kBlock);
  const int64_t Lc = column_panel_width(Lp), Sc = column_panel_width(Sp);
  const float scale = static_cast<float>(p.scale);
  const auto* lse_all = static_cast<const float*>(p.lse.data());
  parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
    [[maybe_unused]] const typename P::Scope products_scope;
    // Per head, as operands: q and dout as B rows [Lp][Dp] and B columns [Dp][Lc], k and v as A
    // rows [Sp][Dp], k as A columns [Dp][Sc]; per block, two A tiles and a B tile [kBlock][kBlock].
    // Float: dq transposed [Dp][Lc] (dq^T += k^T ds^T) and back [Lp][Dp], row statistics [Lp] x 2; per key block dk,
    // dv [kBlock][Dp] and the probabilities and score gradients, transposed [kBlock][kBlock].
    Panels<E> operands(Lp * Dp * 2 + Dp * Lc * 2 + Sp * Dp * 2 + Dp * Sc + kBlock * kBlock * 3);
    E* qr = operands.base;
    E* qt = qr + Lp * Dp;
    E* gr = qt + Dp * Lc;
    E* gt = gr + Lp * Dp;
    E* kr = gt + Dp * Lc;
    E* kc = kr + Sp * Dp;
    E* vr = kc + Dp * Sc;
    E* pa = vr + Sp * Dp;
    E* sa = pa + kBlock * kBlock;
    E* sbt = sa + kBlock * kBlock;
    Panels<float> floats(Dp * Lc + Lp * Dp + Lp * 2 + kBlock * Dp * 2 + kBlock * kBlock * 2);
    float* dqt = floats.base;
    float* dq = dqt + Dp * Lc;
    float* lse = dq + Lp * Dp;
    float* delta = lse + Lp;
    float* dk = delta + Lp;
    float* dv = dk + kBlock * Dp;
    float* pt = dv + kBlock * Dp;
    float* dst = pt + kBlock * kBlock;
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      const Head<const T> q = head_of<const T>(p.q, b, h), k = head_of<const T>(p.k, b, h);
      const Head<const T> v = head_of<const T>(p.v, b, h), g = head_of<const T>(p.dout, b, h);
      const Head<const T> o = head_of<const T>(p.out, b, h);
      load<P, PanelOf::b_rows>(q, 0, L, D, qr, Dp);
      load<P, PanelOf::b_columns>(q, 0, L, D, qt, Lc);
      load<P, PanelOf::b_rows>(g, 0, L, D, gr, Dp);
      load<P, PanelOf::b_columns>(g, 0, L, D, gt, Lc);
      load<P, PanelOf::a_rows>(k, 0, S, D, kr, Dp);
      load<P, PanelOf::a_columns>(k, 0, S, D, kc, Sc);
      load<P, PanelOf::a_rows>(v, 0, S, D, vr, Dp);
      std::fill(dqt, dqt + Dp * Lc, 0.0f);
      for (int64_t i = 0; i < L; ++i) {
        lse[i] = lse_all[bh * L + i];
        const T* oi = o.data + i * o.row_stride;
        const T* gi = g.data + i * g.row_stride;
        float dot = 0;
#pragma omp simd reduction(+ : dot)
        for (int64_t d = 0; d < D; ++d) dot += static_cast<float>(gi[d]) * static_cast<float>(oi[d]);
        delta[i] = dot;
      }
      for (int64_t j0 = 0; j0 < S; j0 += kBlock) {
        const int64_t bc = std::min(kBlock, S - j0);
        std::fill(dk, dk + kBlock * Dp, 0.0f);
        std::fill(dv, dv + kBlock * Dp, 0.0f);
        // Causal: queries before this key block see none of it.
        for (int64_t i0 = p.causal ? j0 : 0; i0 < L; i0 += kBlock) {
          const int64_t br = std::min(kBlock, L - i0), nr = round_up(br, kLanes);
          // Scores and probability gradients, transposed (a row per key).
          P::gemm(bc, nr, Dp, kr + j0 * Dp, Dp, qt + i0 * P::kPair, Lc, pt, kBlock, false);
          P::gemm(bc, nr, Dp, vr + j0 * Dp, Dp, gt + i0 * P::kPair, Lc, dst, kBlock, false);
          for (int64_t c = 0; c < bc; ++c) {
            const int64_t first = p.causal ? j0 + c - i0 : 0;  // first query row that sees key j0 + c
            attention_rows::probabilities_and_grads(pt + c * kBlock, dst + c * kBlock, nr, first, br, scale, lse + i0,
                                                    delta + i0);
          }
          P::gemm(bc, Dp, br, P::tile_as_a(pt, bc, nr, pa), kBlock, gr + i0 * Dp, Dp, dv, Dp, true);
          P::gemm(bc, Dp, br, P::tile_as_a(dst, bc, nr, sa), kBlock, qr + i0 * Dp, Dp, dk, Dp, true);
          P::gemm(Dp, nr, bc, kc + j0, Sc, P::tile_as_b(dst, bc, nr, sbt), kBlock, dqt + i0, Lc, true);
        }
        const Head<T> dk_out = head_of<T>(p.dk, b, h), dv_out = head_of<T>(p.dv, b, h);
        for (int64_t c = 0; c < bc; ++c) {
          P::store(dk + c * Dp, 1.0f, D, dk_out.data + (j0 + c) * dk_out.row_stride);
          P::store(dv + c * Dp, 1.0f, D, dv_out.data + (j0 + c) * dv_out.row_stride);
        }
      }
      const Head<T> dq_out = head_of<T>(p.dq, b, h);
      transpose_block_32bit(reinterpret_cast<const uint32_t*>(dqt), Lc, reinterpret_cast<uint32_t*>(dq), Dp, 0, Dp,
                            0, L, false);
      for (int64_t i = 0; i < L; ++i) P::store(dq + i * Dp, 1.0f, D, dq_out.data + i * dq_out.row_stride);
    }
  });
}

template <class F>
void dispatch_reduced(ScalarType t, const F& f) {
  switch (t) {
    case ScalarType::Float: return f.template operator()<float>();
    case ScalarType::BFloat16: return f.template operator()<BFloat16>();
    case ScalarType::Half: return f.template operator()<Half>();
    default: STRIDER_CHECK(false, "scaled_dot_product_attention", "the cpu kernel does not take ", t);
  }
}

}  // namespace

void attention_forward(const AttentionForward& p) {
  dispatch_reduced(p.q.dtype(), [&]<class T>() { forward_typed<T, Float32Products>(p); });
}

void attention_backward(const AttentionBackward& p) {
  dispatch_reduced(p.q.dtype(), [&]<class T>() { backward_typed<T, Float32Products>(p); });
}

// The list (attention_list.cpp) sends only bfloat16 storage on a CPU with AVX512_BF16 here.
void attention_forward_bf16(const AttentionForward& p) {
  STRIDER_INTERNAL_ASSERT(p.q.dtype() == kBFloat16 && cpu_has(Isa::avx512_bf16), "attention_forward_bf16",
                          "reached with dtype ", p.q.dtype(), " on ", isa_name(cpu_isa()));
  forward_typed<BFloat16, BFloat16Products>(p);
}

void attention_backward_bf16(const AttentionBackward& p) {
  STRIDER_INTERNAL_ASSERT(p.q.dtype() == kBFloat16 && cpu_has(Isa::avx512_bf16), "attention_backward_bf16",
                          "reached with dtype ", p.q.dtype(), " on ", isa_name(cpu_isa()));
  backward_typed<BFloat16, BFloat16Products>(p);
}

// ... and here only on a CPU whose tiles Linux lets this process use.
void attention_forward_amx(const AttentionForward& p) {
  STRIDER_INTERNAL_ASSERT(p.q.dtype() == kBFloat16 && cpu_has(Isa::amx_bf16), "attention_forward_amx",
                          "reached with dtype ", p.q.dtype(), " on ", isa_name(cpu_isa()));
  forward_typed<BFloat16, AmxProducts>(p);
}

void attention_backward_amx(const AttentionBackward& p) {
  STRIDER_INTERNAL_ASSERT(p.q.dtype() == kBFloat16 && cpu_has(Isa::amx_bf16), "attention_backward_amx",
                          "reached with dtype ", p.q.dtype(), " on ", isa_name(cpu_isa()));
  backward_typed<BFloat16, AmxProducts>(p);
}

extern const AttentionKernels attention_kernels{&attention_forward,      &attention_backward,
                                                &attention_forward_bf16, &attention_backward_bf16,
                                                &attention_forward_amx,  &attention_backward_amx};

}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels::cpu
