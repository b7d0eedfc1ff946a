#pragma once
// One output's reduction, shared by the cpu and ref kernels: values arrive one at a time with
// their logical index within the reduced dimensions. Floating inputs accumulate in double,
// integers in int64, so float32 sums do not drift with length.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/reduce.h"
#include "strider/core/scalar_type.h"

namespace strider::kernels {

template <class T>
struct Accumulator {
  using Acc = std::conditional_t<std::is_floating_point_v<opmath_t<T>>, double, int64_t>;
  ReduceOp op;
  Acc sum = 0;
  Acc prod = 1;
  Acc best = 0;
  int64_t best_index = -1;

  explicit Accumulator(ReduceOp o) : op(o) {}

  static bool is_nan(Acc v) {
    if constexpr (std::is_floating_point_v<Acc>) return std::isnan(v);
    else return false;
  }

  // Max/min keep the first occurrence; a NaN wins and then stays (PyTorch's propagation).
  void add_best(Acc v, int64_t index) {
    bool better = op == ReduceOp::Max || op == ReduceOp::Argmax ? v > best : v < best;
    if (best_index < 0 || (!is_nan(best) && (better || is_nan(v)))) {
      best = v;
      best_index = index;
    }
  }

  void add(Acc v, int64_t index) {
    switch (op) {
      case ReduceOp::Sum: case ReduceOp::Mean: case ReduceOp::Var: sum += v; break;
      case ReduceOp::Prod: prod *= v; break;
      default: add_best(v, index); break;
    }
  }
};

}  // namespace strider::kernels
