#pragma once
// Reductions. Outputs are always contiguous (SPEC §9), whatever the input's format. An empty
// `dims` list reduces over every dimension.
#include <optional>
#include <utility>

#include "strider/core/reduce_table.h"
#include "strider/core/tensor.h"

namespace strider::ops {

// The rows of core/reduce_table.h, declared from the table (one row per reduction; its comment
// gives each column): sum (integral and bool inputs give int64 unless `dtype` says otherwise),
// mean, prod (integral inputs give int64), amax, amin, argmax and argmin (int64 indices; no dim:
// into the flattened tensor; ties give the first index), var (Bessel's correction by default,
// correction = 1). mean and var refuse non-floating inputs; max, min and their indices refuse
// a zero-size reduced dimension. NaN propagates through max and min.
STRIDER_REDUCE_OPS(STRIDER_DECLARE_REDUCTION)
// Values and int64 indices of the maximum (minimum) along `dim`; ties give the first index.
std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim = false);
std::pair<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim = false);
// The maximum (minimum) over all elements, 0-d.
Tensor max(const Tensor& t);
Tensor min(const Tensor& t);

}  // namespace strider::ops
