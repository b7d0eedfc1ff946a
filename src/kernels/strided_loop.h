#pragma once
// The loop machinery every elementwise kernel shares. An op's output and inputs (already
// broadcast to one shape, strides in elements, stride 0 where broadcast) become a LoopPlan:
// dimensions ordered by the first operand's strides (innermost first), size-1 dimensions
// dropped, and neighbours merged wherever every operand steps through them as one. A channels-
// last tensor added to a channels-last tensor is therefore a single flat loop, exactly like a
// contiguous one. The plan then runs over element ranges, split across OpenMP threads.
#include <array>
#include <cstdint>

#include "strider/core/tensor.h"
#include "kernels/isa_namespace.h"
#include "kernels/parallel.h"

namespace strider::kernels {

constexpr int kMaxOperands = 4;
// Below this many elements a loop stays on one thread: spawning costs more than it saves.
constexpr int64_t kParallelGrain = 32768;

struct LoopPlan {
  int num_operands = 0;
  int64_t numel = 0;
  DimVector shape;  // shape[0] is the innermost dimension
  std::array<DimVector, kMaxOperands> byte_strides;
  std::array<char*, kMaxOperands> base{};
};

// operands[0] is the output; all share operands[0]'s shape (inputs broadcast via expand).
LoopPlan make_loop_plan(std::initializer_list<const Tensor*> operands);

inline namespace STRIDER_ISA_NAMESPACE {

// fn(char** ptrs, const int64_t* inner_byte_strides, int64_t n) processes n elements along the
// innermost dimension starting at ptrs. Called for every inner run of elements [begin, end).
template <class Fn>
void run_plan_range(const LoopPlan& plan, int64_t begin, int64_t end, Fn& fn) {
  const int nops = plan.num_operands;
  const int64_t ndim = static_cast<int64_t>(plan.shape.size());
  if (ndim == 0) {
    std::array<char*, kMaxOperands> ptrs = plan.base;
    std::array<int64_t, kMaxOperands> zero{};
    if (begin < end) fn(ptrs.data(), zero.data(), int64_t{1});
    return;
  }
  // Multi-index of `begin`.
  std::array<int64_t, 16> idx_small{};
  DimVector idx_big;
  int64_t* idx = idx_small.data();
  if (ndim > 16) {
    idx_big.assign(ndim, 0);
    idx = idx_big.data();
  }
  int64_t rem = begin;
  for (int64_t d = 0; d < ndim; ++d) {
    idx[d] = rem % plan.shape[d];
    rem /= plan.shape[d];
  }
  std::array<char*, kMaxOperands> ptrs;
  std::array<int64_t, kMaxOperands> inner;
  for (int k = 0; k < nops; ++k) {
    char* p = plan.base[k];
    for (int64_t d = 0; d < ndim; ++d) p += idx[d] * plan.byte_strides[k][d];
    ptrs[k] = p;
    inner[k] = plan.byte_strides[k][0];
  }
  int64_t pos = begin;
  const int64_t inner_size = plan.shape[0];
  while (pos < end) {
    int64_t n = std::min(inner_size - idx[0], end - pos);
    fn(ptrs.data(), inner.data(), n);
    pos += n;
    if (pos >= end) break;
    // Advance: finish the inner row, then carry into outer dimensions.
    for (int k = 0; k < nops; ++k) ptrs[k] -= idx[0] * inner[k];
    idx[0] = 0;
    for (int64_t d = 1; d < ndim; ++d) {
      ++idx[d];
      for (int k = 0; k < nops; ++k) ptrs[k] += plan.byte_strides[k][d];
      if (idx[d] < plan.shape[d]) break;
      for (int k = 0; k < nops; ++k) ptrs[k] -= plan.shape[d] * plan.byte_strides[k][d];
      idx[d] = 0;
    }
  }
}

// Runs fn over the whole plan, in parallel when it is large enough.
template <class Fn>
void run_plan(const LoopPlan& plan, Fn fn, int64_t grain = kParallelGrain) {
  parallel_for(0, plan.numel, grain, [&](int64_t b, int64_t e) {
    Fn local = fn;
    run_plan_range(plan, b, e, local);
  });
}

}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels
