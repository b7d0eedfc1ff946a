// Reductions: parallel over outputs when there are many, otherwise parallel over the reduced
// range of each output with per-thread partial sums. The innermost reduced dimension is the
// inner loop (vectorized for sums).
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/kernel_tables.h"
#include "kernels/isa_namespace.h"
#include "kernels/parallel.h"
#include "kernels/reduce.h"
#include "kernels/reduce_accumulate.h"
#include "strider/core/dispatch.h"

namespace strider::kernels::cpu {
inline namespace STRIDER_ISA_NAMESPACE {
namespace {

constexpr int64_t kParallelReduceGrain = 65536;

struct Geometry {
  DimVector kept_sizes, kept_in, kept_out;  // logical order
  DimVector red_sizes, red_in;              // logical order
  int64_t outputs = 1, length = 1;
};

Geometry split(const Tensor& out, const Tensor& in) {
  Geometry g;
  for (int64_t d = 0; d < in.dim(); ++d) {
    bool reduced = out.strides()[d] == 0 && in.sizes()[d] != 1;
    if (in.sizes()[d] == 1) continue;
    if (reduced) {
      g.red_sizes.push_back(in.sizes()[d]);
      g.red_in.push_back(in.strides()[d]);
      g.length *= in.sizes()[d];
    } else {
      g.kept_sizes.push_back(in.sizes()[d]);
      g.kept_in.push_back(in.strides()[d]);
      g.kept_out.push_back(out.strides()[d]);
      g.outputs *= in.sizes()[d];
    }
  }
  if (in.numel() == 0) g.outputs = out.numel() == 0 ? 0 : g.outputs;
  return g;
}

// Visits reduced elements [begin, end) (logical order) of one output starting at `base`.
template <class T, class Acc>
void accumulate_range(const Geometry& g, const T* base, int64_t begin, int64_t end, Acc& acc) {
  const int64_t nr = static_cast<int64_t>(g.red_sizes.size());
  if (nr == 0) {
    if (begin < end) acc.add(static_cast<typename Acc::Acc>(static_cast<opmath_t<T>>(*base)), 0);
    return;
  }
  const int64_t inner = g.red_sizes[nr - 1], inner_stride = g.red_in[nr - 1];
  int64_t pos = begin;
  while (pos < end) {
    int64_t rem = pos / inner, i0 = pos % inner;
    const T* p = base;
    for (int64_t d = nr - 2; d >= 0; --d) {
      p += (rem % g.red_sizes[d]) * g.red_in[d];
      rem /= g.red_sizes[d];
    }
    int64_t n = std::min(inner - i0, end - pos);
    if (acc.kind == Accumulate::Sum && inner_stride == 1) {
      typename Acc::Acc s = 0;
      const T* q = p + i0;
#pragma omp simd reduction(+ : s)
      for (int64_t i = 0; i < n; ++i) s += static_cast<typename Acc::Acc>(static_cast<opmath_t<T>>(q[i]));
      acc.sum += s;
    } else {
      for (int64_t i = 0; i < n; ++i)
        acc.add(static_cast<typename Acc::Acc>(static_cast<opmath_t<T>>(p[(i0 + i) * inner_stride])),
                pos + i);
    }
    pos += n;
  }
}

// The kept elements' innermost dimension is contiguous and every reduced dimension steps over
// it: summing over dim 0 of [N, C] (bias gradients, normalization weights). Walking each output
// down its column touches a new cache line per element.
bool columns_inside(const Geometry& g) {
  if (g.kept_sizes.empty() || g.red_sizes.empty() || g.kept_in.back() != 1) return false;
  for (int64_t s : g.red_in)
    if (s < g.kept_sizes.back()) return false;
  return true;
}

// Sums columns row by row: each output still adds its elements one by one in logical order, in
// the same accumulator type as accumulate_range, so the result is bit for bit the one the
// per-output loop gives; only the traversal follows memory.
template <class T, class TO>
void sum_columns(ReduceOp op, const Geometry& g, const T* in_base, TO* out_base, const ReduceArgs& args) {
  using Acc = typename Accumulator<T>::Acc;
  constexpr int64_t kBlock = 256;  // columns per task: a block of accumulators stays in L1
  const int64_t inner = g.kept_sizes.back(), nk = static_cast<int64_t>(g.kept_sizes.size());
  const int64_t outer = g.outputs / inner, blocks = (inner + kBlock - 1) / kBlock;
  const int64_t nr = static_cast<int64_t>(g.red_sizes.size());
  const int64_t out_inner = g.kept_out.back();
  parallel_for(0, outer * blocks, 1, [&](int64_t b, int64_t e) {
    Acc acc[kBlock];
    for (int64_t task = b; task < e; ++task) {
      const int64_t o = task / blocks, c0 = (task % blocks) * kBlock, n = std::min(kBlock, inner - c0);
      int64_t in_off = 0, out_off = 0, rem = o;
      for (int64_t d = nk - 2; d >= 0; --d) {
        const int64_t i = rem % g.kept_sizes[d];
        rem /= g.kept_sizes[d];
        in_off += i * g.kept_in[d];
        out_off += i * g.kept_out[d];
      }
      std::fill(acc, acc + n, Acc(0));
      for (int64_t r = 0; r < g.length; ++r) {
        int64_t off = 0, rr = r;
        for (int64_t d = nr - 1; d >= 0; --d) {
          off += (rr % g.red_sizes[d]) * g.red_in[d];
          rr /= g.red_sizes[d];
        }
        const T* row = in_base + in_off + off + c0;
#pragma omp simd
        for (int64_t c = 0; c < n; ++c) acc[c] += static_cast<Acc>(static_cast<opmath_t<T>>(row[c]));
      }
      for (int64_t c = 0; c < n; ++c) {
        Accumulator<T> a(op);
        a.sum = acc[c];
        out_base[out_off + (c0 + c) * out_inner] = finish<TO>(op, a, g.length, 0.0, args);
      }
    }
  });
}

template <class T, class TO>
void reduce_typed(ReduceOp op, const Tensor& out, const Tensor& in, const ReduceArgs& args) {
  const Geometry g = split(out, in);
  // No outputs (a kept dim of size 0): nothing to write, and the loops below divide by the kept
  // and reduced extents.
  if (g.outputs == 0) return;
  const T* in_base = static_cast<const T*>(in.data());
  TO* out_base = static_cast<TO*>(out.data());
  const int64_t nk = static_cast<int64_t>(g.kept_sizes.size());
  auto offsets = [&](int64_t o, int64_t& in_off, int64_t& out_off) {
    in_off = out_off = 0;
    for (int64_t d = nk - 1; d >= 0; --d) {
      int64_t i = o % g.kept_sizes[d];
      o /= g.kept_sizes[d];
      in_off += i * g.kept_in[d];
      out_off += i * g.kept_out[d];
    }
  };
  auto variance_sq = [&](const T* base, double mean) {
    double sq = 0;
    const int64_t nr = static_cast<int64_t>(g.red_sizes.size());
    for (int64_t r = 0; r < g.length; ++r) {
      int64_t rem = r, off = 0;
      for (int64_t d = nr - 1; d >= 0; --d) {
        off += (rem % g.red_sizes[d]) * g.red_in[d];
        rem /= g.red_sizes[d];
      }
      double dv = static_cast<double>(static_cast<opmath_t<T>>(base[off])) - mean;
      sq += dv * dv;
    }
    return sq;
  };
  const int nthreads = omp_get_max_threads();
  const bool per_output = g.outputs >= nthreads * 4 || g.length < kParallelReduceGrain || omp_in_parallel();
  const bool centered = accumulation(op) == Accumulate::Centered;
  if (per_output && accumulation(op) == Accumulate::Sum && columns_inside(g)) {
    sum_columns<T, TO>(op, g, in_base, out_base, args);
    return;
  }
  if (per_output) {
    parallel_for(0, g.outputs, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, g.length)),
                 [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        int64_t in_off, out_off;
        offsets(o, in_off, out_off);
        Accumulator<T> acc(op);
        accumulate_range(g, in_base + in_off, 0, g.length, acc);
        double sq = centered ? variance_sq(in_base + in_off, static_cast<double>(acc.sum) / g.length) : 0.0;
        out_base[out_off] = finish<TO>(op, acc, g.length, sq, args);
      }
    });
    return;
  }
  // Few outputs, long reductions: split each reduction across threads.
  for (int64_t o = 0; o < g.outputs; ++o) {
    int64_t in_off, out_off;
    offsets(o, in_off, out_off);
    std::vector<Accumulator<T>> partial(nthreads, Accumulator<T>(op));
    parallel_for(0, g.length, kParallelReduceGrain, [&](int64_t b, int64_t e) {
      int t = omp_get_thread_num();
      accumulate_range(g, in_base + in_off, b, e, partial[t]);
    });
    // Partials are merged in thread order, which is logical order, so ties keep the first index.
    Accumulator<T> acc(op);
    for (int t = 0; t < nthreads; ++t) {
      const auto& p = partial[t];
      acc.sum += p.sum;
      acc.prod *= p.prod;
      if (p.best_index >= 0) acc.add_best(p.best, p.best_index);
    }
    double sq = centered ? variance_sq(in_base + in_off, static_cast<double>(acc.sum) / g.length) : 0.0;
    out_base[out_off] = finish<TO>(op, acc, g.length, sq, args);
  }
}

}  // namespace

void reduce(ReduceOp op, const Tensor& out, const Tensor& in, const ReduceArgs& args) {
  dispatch_all(in.dtype(), name(op), [&]<class T>() {
    dispatch_all(out.dtype(), name(op), [&]<class TO>() {
      if constexpr (std::is_same_v<TO, bool> && !std::is_same_v<T, bool>) {
        STRIDER_INTERNAL_ASSERT(false, "bool output for ", name(op));
      } else {
        reduce_typed<T, TO>(op, out, in, args);
      }
    });
  });
}

extern const ReduceKernels reduce_kernels{&reduce};
}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels::cpu
