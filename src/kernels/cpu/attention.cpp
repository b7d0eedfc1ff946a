// Blocked attention (kernels/attention.h) in float32 whatever the storage dtype: each head's
// operands are first copied into float panels (K and V once per head, transposed where a product
// needs them that way), then every block product runs on one register-tiled micro-kernel.
#include <immintrin.h>

#include <cmath>
#include <limits>

#include "kernels/attention.h"
#include "kernels/cpu/kernel_tables.h"
#include "kernels/cpu_isa.h"
#include "kernels/isa_namespace.h"
#include "kernels/parallel.h"
#include "kernels/scratch.h"
#include "kernels/vec_math.h"
#include "strider/core/dispatch.h"

namespace strider::kernels::cpu {
inline namespace STRIDER_ISA_NAMESPACE {
namespace {

// Query and key rows per block: a 64 x 64 float tile is 16 KiB and stays in L1 next to the rows
// of the operands it meets.
constexpr int64_t kBlock = 64;
constexpr int64_t kLanes = 16;  // floats per AVX-512 register (two AVX2 ones); panels pad columns to a multiple

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// ---- C[m x n] (+)= A[m x k] B[k x n], row-major float panels; n a multiple of kLanes. One
// register-tiled body per instruction set, chosen at run time (kernels/cpu_isa.h).
#define STRIDER_AVX512 __attribute__((target("avx512f")))
template <int R, int V>
STRIDER_AVX512 inline void gemm_tile_avx512(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                                            float* c, int64_t ldc, bool accumulate) {
  __m512 acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = accumulate ? _mm512_loadu_ps(c + r * ldc + 16 * v) : _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    __m512 bv[V];
    for (int v = 0; v < V; ++v) bv[v] = _mm512_loadu_ps(b + p * ldb + 16 * v);
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + p]);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
}

template <int R>
STRIDER_AVX512 void gemm_rows_avx512(int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                                     float* c, int64_t ldc, bool accumulate) {
  int64_t j = 0;
  for (; j + 64 <= n; j += 64) gemm_tile_avx512<R, 4>(k, a, lda, b + j, ldb, c + j, ldc, accumulate);
  switch ((n - j) / 16) {
    case 3: gemm_tile_avx512<R, 3>(k, a, lda, b + j, ldb, c + j, ldc, accumulate); break;
    case 2: gemm_tile_avx512<R, 2>(k, a, lda, b + j, ldb, c + j, ldc, accumulate); break;
    case 1: gemm_tile_avx512<R, 1>(k, a, lda, b + j, ldb, c + j, ldc, accumulate); break;
    default: break;
  }
}

STRIDER_AVX512 void gemm_avx512(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                                int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) gemm_rows_avx512<4>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate);
  switch (m - i) {
    case 3: gemm_rows_avx512<3>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate); break;
    case 2: gemm_rows_avx512<2>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate); break;
    case 1: gemm_rows_avx512<1>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate); break;
    default: break;
  }
}
#undef STRIDER_AVX512

// AVX2 has 16 registers of 8 floats: tiles of R rows x 16 columns (2R accumulators).
#define STRIDER_AVX2 __attribute__((target("avx2,fma")))
template <int R>
STRIDER_AVX2 inline void gemm_tile_avx2(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                                        int64_t ldc, bool accumulate) {
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < 2; ++v) acc[r][v] = accumulate ? _mm256_loadu_ps(c + r * ldc + 8 * v) : _mm256_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    const __m256 b0 = _mm256_loadu_ps(b + p * ldb), b1 = _mm256_loadu_ps(b + p * ldb + 8);
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_set1_ps(a[r * lda + p]);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < 2; ++v) _mm256_storeu_ps(c + r * ldc + 8 * v, acc[r][v]);
}

template <int R>
STRIDER_AVX2 void gemm_rows_avx2(int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                                 float* c, int64_t ldc, bool accumulate) {
  for (int64_t j = 0; j < n; j += 16) gemm_tile_avx2<R>(k, a, lda, b + j, ldb, c + j, ldc, accumulate);
}

STRIDER_AVX2 void gemm_avx2(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                            float* c, int64_t ldc, bool accumulate) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) gemm_rows_avx2<4>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate);
  switch (m - i) {
    case 3: gemm_rows_avx2<3>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate); break;
    case 2: gemm_rows_avx2<2>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate); break;
    case 1: gemm_rows_avx2<1>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, accumulate); break;
    default: break;
  }
}
#undef STRIDER_AVX2

void gemm_scalar(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                 int64_t ldc, bool accumulate) {
  for (int64_t i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
    if (!accumulate)
      for (int64_t j = 0; j < n; ++j) ci[j] = 0;
    for (int64_t p = 0; p < k; ++p) {
      const float ap = a[i * lda + p];
      const float* bp = b + p * ldb;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) ci[j] += ap * bp[j];
    }
  }
}

using Gemm = void (*)(int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t, bool);

void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
          int64_t ldc, bool accumulate) {
  static const Gemm chosen = cpu_has(Isa::avx512) ? gemm_avx512 : cpu_has(Isa::avx2) ? gemm_avx2 : gemm_scalar;
  chosen(m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

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

// Rows [r0, r0 + n) of a head into panel[n][ld] as float (columns D.. are left alone).
template <class T>
void load_rows(Head<const T> src, int64_t r0, int64_t n, int64_t D, float* panel, int64_t ld) {
  for (int64_t r = 0; r < n; ++r) {
    const T* s = src.data + (r0 + r) * src.row_stride;
    float* dst = panel + r * ld;
#pragma omp simd
    for (int64_t d = 0; d < D; ++d) dst[d] = static_cast<float>(s[d]);
  }
}

// All rows of a head into panel[D][ld] transposed (column r is row r of the head).
template <class T>
void load_transposed(Head<const T> src, int64_t n, int64_t D, float* panel, int64_t ld) {
  for (int64_t r = 0; r < n; ++r) {
    const T* s = src.data + r * src.row_stride;
    for (int64_t d = 0; d < D; ++d) panel[d * ld + r] = static_cast<float>(s[d]);
  }
}

template <class T>
void store_row(const float* row, float scale, int64_t D, T* dst) {
#pragma omp simd
  for (int64_t d = 0; d < D; ++d) dst[d] = static_cast<T>(row[d] * scale);
}

// Zero-filled float panels from the allocator; the padding (columns past D, rows past the
// sequence) is never written, so it stays zero and products over it add nothing.
struct Panels {
  Tensor bytes;
  float* base;
  explicit Panels(int64_t floats) : bytes(scratch_bytes(floats * 4)), base(static_cast<float*>(bytes.data())) {
    std::fill(base, base + floats, 0.0f);
  }
};

template <class T>
void forward_typed(const AttentionForward& p) {
  const int64_t B = p.q.sizes()[0], H = p.q.sizes()[1], L = p.q.sizes()[2], D = p.q.sizes()[3], S = p.k.sizes()[2];
  const int64_t Dp = round_up(D, kLanes), Sp = round_up(S, kBlock);
  const float scale = static_cast<float>(p.scale);
  auto* lse = static_cast<float*>(p.lse.data());
  parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
    // kt [Dp][Sp], v [Sp][Dp], q block [kBlock][Dp], scores [kBlock][kBlock], o [kBlock][Dp].
    Panels panels(Dp * Sp * 2 + kBlock * Dp * 2 + kBlock * kBlock);
    float* kt = panels.base;
    float* vp = kt + Dp * Sp;
    float* qb = vp + Sp * Dp;
    float* ob = qb + kBlock * Dp;
    float* sb = ob + kBlock * Dp;
    float row_max[kBlock], row_sum[kBlock];
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      const Head<const T> q = head_of<const T>(p.q, b, h), k = head_of<const T>(p.k, b, h), v = head_of<const T>(p.v, b, h);
      const Head<T> out = head_of<T>(p.out, b, h);
      load_transposed(k, S, D, kt, Sp);
      load_rows(v, 0, S, D, vp, Dp);
      for (int64_t i0 = 0; i0 < L; i0 += kBlock) {
        const int64_t br = std::min(kBlock, L - i0);
        load_rows(q, i0, br, D, qb, Dp);
        std::fill(ob, ob + br * Dp, 0.0f);
        std::fill(row_max, row_max + br, -std::numeric_limits<float>::infinity());
        std::fill(row_sum, row_sum + br, 0.0f);
        const int64_t key_end = p.causal ? std::min(S, i0 + br) : S;
        for (int64_t j0 = 0; j0 < key_end; j0 += kBlock) {
          const int64_t bc = std::min(kBlock, S - j0), nc = round_up(bc, kLanes);
          gemm(br, nc, Dp, qb, Dp, kt + j0, Sp, sb, kBlock, false);
          for (int64_t r = 0; r < br; ++r) {
            float* row = sb + r * kBlock;
            const int64_t visible = p.causal ? std::min(bc, i0 + r - j0 + 1) : bc;
            if (visible <= 0) {
              std::fill(row, row + nc, 0.0f);
              continue;
            }
            float mx = row_max[r];
#pragma omp simd reduction(max : mx)
            for (int64_t c = 0; c < visible; ++c) mx = std::max(mx, row[c] * scale);
            const float alpha = vmath::exp(row_max[r] - mx);
            float sum = 0;
#pragma omp simd reduction(+ : sum)
            for (int64_t c = 0; c < nc; ++c) {
              const float e = c < visible ? vmath::exp(row[c] * scale - mx) : 0.0f;
              row[c] = e;
              sum += e;
            }
            row_sum[r] = row_sum[r] * alpha + sum;
            row_max[r] = mx;
            if (alpha != 1.0f) {
              float* o = ob + r * Dp;
#pragma omp simd
              for (int64_t d = 0; d < Dp; ++d) o[d] *= alpha;
            }
          }
          gemm(br, Dp, bc, sb, kBlock, vp + j0 * Dp, Dp, ob, Dp, true);
        }
        for (int64_t r = 0; r < br; ++r) {
          store_row(ob + r * Dp, 1.0f / row_sum[r], D, out.data + (i0 + r) * out.row_stride);
          lse[bh * L + i0 + r] = row_max[r] + std::log(row_sum[r]);
        }
      }
    }
  });
}

template <class T>
void backward_typed(const AttentionBackward& p) {
  const int64_t B = p.q.sizes()[0], H = p.q.sizes()[1], L = p.q.sizes()[2], D = p.q.sizes()[3], S = p.k.sizes()[2];
  const int64_t Dp = round_up(D, kLanes), Lp = round_up(L, kBlock), Sp = round_up(S, kBlock);
  const float scale = static_cast<float>(p.scale);
  const auto* lse_all = static_cast<const float*>(p.lse.data());
  parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
    // Per head: q and dout as rows [Lp][Dp] and transposed [Dp][Lp], k and v rows [Sp][Dp], the
    // dq accumulator [Lp][Dp], row statistics [Lp] x 2; per key block: dk, dv [kBlock][Dp] and
    // three [kBlock][kBlock] tiles (probabilities, score gradients, and the latter transposed).
    Panels panels(Lp * Dp * 5 + Sp * Dp * 2 + Lp * 2 + kBlock * Dp * 2 + kBlock * kBlock * 3);
    float* qr = panels.base;
    float* qt = qr + Lp * Dp;
    float* gr = qt + Dp * Lp;
    float* gt = gr + Lp * Dp;
    float* dq = gt + Dp * Lp;
    float* kr = dq + Lp * Dp;
    float* vr = kr + Sp * Dp;
    float* lse = vr + Sp * Dp;
    float* delta = lse + Lp;
    float* dk = delta + Lp;
    float* dv = dk + kBlock * Dp;
    float* pt = dv + kBlock * Dp;
    float* dst = pt + kBlock * kBlock;
    float* ds = dst + kBlock * kBlock;
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      const Head<const T> q = head_of<const T>(p.q, b, h), k = head_of<const T>(p.k, b, h);
      const Head<const T> v = head_of<const T>(p.v, b, h), g = head_of<const T>(p.dout, b, h);
      const Head<const T> o = head_of<const T>(p.out, b, h);
      load_rows(q, 0, L, D, qr, Dp);
      load_transposed(q, L, D, qt, Lp);
      load_rows(g, 0, L, D, gr, Dp);
      load_transposed(g, L, D, gt, Lp);
      load_rows(k, 0, S, D, kr, Dp);
      load_rows(v, 0, S, D, vr, Dp);
      std::fill(dq, dq + L * Dp, 0.0f);
      for (int64_t i = 0; i < L; ++i) {
        lse[i] = lse_all[bh * L + i];
        const T* oi = o.data + i * o.row_stride;
        const float* gi = gr + i * Dp;
        float dot = 0;
#pragma omp simd reduction(+ : dot)
        for (int64_t d = 0; d < D; ++d) dot += gi[d] * static_cast<float>(oi[d]);
        delta[i] = dot;
      }
      for (int64_t j0 = 0; j0 < S; j0 += kBlock) {
        const int64_t bc = std::min(kBlock, S - j0);
        std::fill(dk, dk + kBlock * Dp, 0.0f);
        std::fill(dv, dv + kBlock * Dp, 0.0f);
        // Causal: queries before this key block see none of it.
        for (int64_t i0 = p.causal ? j0 : 0; i0 < L; i0 += kBlock) {
          const int64_t br = std::min(kBlock, L - i0), nr = round_up(br, kLanes);
          gemm(bc, nr, Dp, kr + j0 * Dp, Dp, qt + i0, Lp, pt, kBlock, false);   // scores, transposed
          gemm(bc, nr, Dp, vr + j0 * Dp, Dp, gt + i0, Lp, dst, kBlock, false);  // d probabilities, transposed
          for (int64_t c = 0; c < bc; ++c) {
            float* prow = pt + c * kBlock;
            float* srow = dst + c * kBlock;
            const int64_t first = p.causal ? j0 + c - i0 : 0;  // first query row that sees key j0 + c
#pragma omp simd
            for (int64_t r = 0; r < nr; ++r) {
              const bool seen = r < br && r >= first;
              const float pr = seen ? vmath::exp(prow[r] * scale - lse[i0 + r]) : 0.0f;
              prow[r] = pr;
              srow[r] = pr * (srow[r] - delta[i0 + r]) * scale;
            }
          }
          gemm(bc, Dp, br, pt, kBlock, gr + i0 * Dp, Dp, dv, Dp, true);
          gemm(bc, Dp, br, dst, kBlock, qr + i0 * Dp, Dp, dk, Dp, true);
          for (int64_t c = 0; c < bc; ++c)
            for (int64_t r = 0; r < br; ++r) ds[r * kBlock + c] = dst[c * kBlock + r];
          gemm(br, Dp, bc, ds, kBlock, kr + j0 * Dp, Dp, dq + i0 * Dp, Dp, true);
        }
        const Head<T> dk_out = head_of<T>(p.dk, b, h), dv_out = head_of<T>(p.dv, b, h);
        for (int64_t c = 0; c < bc; ++c) {
          store_row(dk + c * Dp, 1.0f, D, dk_out.data + (j0 + c) * dk_out.row_stride);
          store_row(dv + c * Dp, 1.0f, D, dv_out.data + (j0 + c) * dv_out.row_stride);
        }
      }
      const Head<T> dq_out = head_of<T>(p.dq, b, h);
      for (int64_t i = 0; i < L; ++i) store_row(dq + i * Dp, 1.0f, D, dq_out.data + i * dq_out.row_stride);
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
  dispatch_reduced(p.q.dtype(), [&]<class T>() { forward_typed<T>(p); });
}

void attention_backward(const AttentionBackward& p) {
  dispatch_reduced(p.q.dtype(), [&]<class T>() { backward_typed<T>(p); });
}

extern const AttentionKernels attention_kernels{&attention_forward, &attention_backward};

}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels::cpu
