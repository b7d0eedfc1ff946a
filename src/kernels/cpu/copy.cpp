// Layout-changing copies. The plan orders dimensions by the destination's strides; when the
// source is unit-stride along some other dimension, the copy is a batch of 2-d transposes,
// done in tiles so that both the reads and the writes stay within a few cache lines.
#include <cstring>

#include "kernels/cpu/kernel_tables.h"
#include "kernels/isa_namespace.h"
#include "kernels/copy.h"
#include "kernels/cpu/inner_loops.h"
#include "kernels/cpu/transpose.h"
#include "kernels/parallel.h"
#include "kernels/strided_loop.h"
#include "strider/core/dispatch.h"

namespace strider::kernels::cpu {
inline namespace STRIDER_ISA_NAMESPACE {
namespace {

template <class T>
void transpose_tiles(const LoopPlan& plan, int64_t b_dim) {
  // Dimension 0 is unit-stride in dst, b_dim is unit-stride in src; others are batch dims.
  const int64_t A = plan.shape[0], B = plan.shape[b_dim];
  const int64_t dst_b = plan.byte_strides[0][b_dim] / int64_t(sizeof(T));
  const int64_t src_a = plan.byte_strides[1][0] / int64_t(sizeof(T));
  DimVector batch_dims;
  int64_t batch = 1;
  for (int64_t d = 1; d < static_cast<int64_t>(plan.shape.size()); ++d)
    if (d != b_dim) {
      batch_dims.push_back(d);
      batch *= plan.shape[d];
    }
  constexpr int64_t kTile = 128 / sizeof(T);  // 32 floats: two cache lines per row
  const int64_t b_tiles = (B + kTile - 1) / kTile;
  const int64_t work = batch * b_tiles;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (kTile * A));
  // Destinations much larger than the last-level cache are written around it.
  const bool stream = batch * A * B * int64_t(sizeof(T)) > (int64_t(16) << 20);
  parallel_for(0, work, grain, [&](int64_t begin, int64_t end) {
    for (int64_t w = begin; w < end; ++w) {
      int64_t bi = w / b_tiles, bt = w % b_tiles;
      char* dst = plan.base[0];
      const char* src = plan.base[1];
      for (int64_t k = static_cast<int64_t>(batch_dims.size()) - 1, rem = bi; k >= 0; --k) {
        int64_t d = batch_dims[k];
        int64_t i = rem % plan.shape[d];
        rem /= plan.shape[d];
        dst += i * plan.byte_strides[0][d];
        src += i * plan.byte_strides[1][d];
      }
      T* out = reinterpret_cast<T*>(dst);
      const T* in = reinterpret_cast<const T*>(src);
      const int64_t b0 = bt * kTile, b1 = std::min(B, b0 + kTile);
      if constexpr (sizeof(T) == 4) {
        // a in chunks too, so the rows being read stay in L1 while a tile is transposed.
        for (int64_t a0 = 0; a0 < A; a0 += 4 * kTile)
          transpose_block_32bit(in, src_a, out, dst_b, a0, std::min(A, a0 + 4 * kTile), b0, b1, stream);
      } else if constexpr (sizeof(T) == 2) {
        for (int64_t a0 = 0; a0 < A; a0 += 4 * kTile)
          transpose_block_16bit(in, src_a, out, dst_b, a0, std::min(A, a0 + 4 * kTile), b0, b1, stream);
      } else {
        for (int64_t a0 = 0; a0 < A; a0 += kTile) {
          const int64_t a1 = std::min(A, a0 + kTile);
          for (int64_t b = b0; b < b1; ++b) {
            T* o = out + b * dst_b;
            const T* i = in + b;
#pragma omp simd
            for (int64_t a = a0; a < a1; ++a) o[a] = i[a * src_a];
          }
        }
      }
    }
    if (stream) store_fence();  // each thread orders its own non-temporal stores
  });
}

template <class T>
void same_dtype_copy(const LoopPlan& plan) {
  constexpr int64_t E = sizeof(T);
  // A transpose is worth it when dst's inner dim is unit-stride but src's is not, and src is
  // unit-stride along another dimension of decent length.
  if (plan.shape.size() >= 2 && plan.byte_strides[0][0] == E && plan.byte_strides[1][0] != E &&
      plan.shape[0] >= 4) {
    for (int64_t d = 1; d < static_cast<int64_t>(plan.shape.size()); ++d) {
      if (plan.byte_strides[1][d] == E && plan.shape[d] >= 4) {
        transpose_tiles<T>(plan, d);
        return;
      }
    }
  }
  run_plan(plan, [](char** p, const int64_t* s, int64_t n) {
    if (s[0] == E && s[1] == E) {
      std::memcpy(p[0], p[1], static_cast<size_t>(n * E));
    } else {
      unary_inner<T, T>(p, s, n, [](opmath_t<T> x) { return x; });
    }
  });
}

template <size_t E> struct Bits;
template <> struct Bits<1> { using type = uint8_t; };
template <> struct Bits<2> { using type = uint16_t; };
template <> struct Bits<4> { using type = uint32_t; };
template <> struct Bits<8> { using type = uint64_t; };

}  // namespace

void copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  const bool same_dtype = dst.dtype() == src.dtype();
  if (same_dtype && dst.is_non_overlapping_and_dense() && src.is_non_overlapping_and_dense() &&
      dst.strides() == src.strides()) {
    // Same dense layout: the bytes are one block in both.
    char* d = static_cast<char*>(dst.data());
    const char* s = static_cast<const char*>(src.data());
    const int64_t nbytes = static_cast<int64_t>(dst.nbytes());
    parallel_for(0, nbytes, 1 << 20, [&](int64_t b, int64_t e) {
      std::memcpy(d + b, s + b, static_cast<size_t>(e - b));
    });
    return;
  }
  LoopPlan plan = make_loop_plan({&dst, &src});
  if (same_dtype) {
    switch (dst.element_size()) {
      case 1: same_dtype_copy<Bits<1>::type>(plan); return;
      case 2: same_dtype_copy<Bits<2>::type>(plan); return;
      case 4: same_dtype_copy<Bits<4>::type>(plan); return;
      case 8: same_dtype_copy<Bits<8>::type>(plan); return;
    }
  }
  dispatch_all(dst.dtype(), "copy_", [&]<class TO>() {
    dispatch_all(src.dtype(), "copy_", [&]<class TI>() {
      run_plan(plan, [](char** p, const int64_t* s, int64_t n) {
        auto* o = reinterpret_cast<TO*>(p[0]);
        const auto* in = reinterpret_cast<const TI*>(p[1]);
        if (s[0] == sizeof(TO) && s[1] == sizeof(TI)) {
#pragma omp simd
          for (int64_t i = 0; i < n; ++i) {
            if constexpr (std::is_same_v<TO, bool>) o[i] = convert<TO, TI>(in[i]);
            else store_as(o[i], static_cast<opmath_t<TI>>(in[i]));
          }
        } else {
          char* po = p[0];
          const char* pi = p[1];
          for (int64_t i = 0; i < n; ++i, po += s[0], pi += s[1])
            *reinterpret_cast<TO*>(po) = convert<TO, TI>(*reinterpret_cast<const TI*>(pi));
        }
      });
    });
  });
}

void fill(const Tensor& dst, const Scalar& value) {
  LoopPlan plan = make_loop_plan({&dst});
  dispatch_all(dst.dtype(), "fill_", [&]<class T>() {
    const T v = value.to<T>();
    run_plan(plan, [v](char** p, const int64_t* s, int64_t n) {
      if (s[0] == sizeof(T)) {
        T* o = reinterpret_cast<T*>(p[0]);
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) o[i] = v;
      } else {
        char* po = p[0];
        for (int64_t i = 0; i < n; ++i, po += s[0]) *reinterpret_cast<T*>(po) = v;
      }
    });
  });
}

extern const CopyKernels copy_kernels{&copy, &fill};
}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels::cpu
