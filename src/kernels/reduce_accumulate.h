#pragma once
// One output's reduction, shared by the cpu and ref kernels: values arrive one at a time with
// their logical index within the reduced dimensions. Floating inputs accumulate in double,
// integers in int64, so float32 sums do not drift with length.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/isa_namespace.h"
#include "kernels/reduce.h"
#include "strider/core/scalar_type.h"

namespace strider::kernels {
inline namespace STRIDER_ISA_NAMESPACE {

template <class T>
struct Accumulator {
  using Acc = std::conditional_t<std::is_floating_point_v<opmath_t<T>>, double, int64_t>;
  ReduceOp op;
  Accumulate kind;
  Acc sum = 0;
  Acc prod = 1;
  Acc best = 0;
  int64_t best_index = -1;

  explicit Accumulator(ReduceOp o) : op(o), kind(accumulation(o)) {}

  static bool is_nan(Acc v) {
    if constexpr (std::is_floating_point_v<Acc>) return std::isnan(v);
    else return false;
  }

  // Max/min keep the first occurrence; a NaN wins and then stays (PyTorch's propagation).
  void add_best(Acc v, int64_t index) {
    bool better = kind == Accumulate::Max ? v > best : v < best;
    if (best_index < 0 || (!is_nan(best) && (better || is_nan(v)))) {
      best = v;
      best_index = index;
    }
  }

  void add(Acc v, int64_t index) {
    switch (kind) {
      case Accumulate::Sum: case Accumulate::Centered: sum += v; break;
      case Accumulate::Prod: prod *= v; break;
      case Accumulate::Max: case Accumulate::Min: add_best(v, index); break;
    }
  }
};

// One output's value: the row's result column, from the accumulator, the element count n and,
// for Centered rows, the squared deviations from the mean sq.
template <class TO, class T>
TO finish(ReduceOp op, [[maybe_unused]] const Accumulator<T>& acc, [[maybe_unused]] int64_t n,
          [[maybe_unused]] double sq, [[maybe_unused]] const ReduceArgs& a) {
#define STRIDER_RESULT(Enum, function, name, signature, rule, empty, accumulate, result, ...) \
  case ReduceOp::Enum: return static_cast<TO>(result);
  switch (op) { STRIDER_REDUCE_OPS(STRIDER_RESULT) }
#undef STRIDER_RESULT
  return TO();
}

}  // namespace STRIDER_ISA_NAMESPACE
}  // namespace strider::kernels
