#pragma once
// Reductions. Outputs are always contiguous (SPEC §9), whatever the input's format. An empty
// `dims` list reduces over every dimension.
#include <optional>
#include <utility>

#include "strider/core/tensor.h"

namespace strider::ops {

// Integral and bool inputs sum to int64 unless `dtype` says otherwise.
Tensor sum(const Tensor& t, IntArrayRef dims = {}, bool keepdim = false,
           std::optional<ScalarType> dtype = std::nullopt);
Tensor mean(const Tensor& t, IntArrayRef dims = {}, bool keepdim = false);
Tensor prod(const Tensor& t, IntArrayRef dims = {}, bool keepdim = false);
Tensor amax(const Tensor& t, IntArrayRef dims = {}, bool keepdim = false);
Tensor amin(const Tensor& t, IntArrayRef dims = {}, bool keepdim = false);
// Values and int64 indices of the maximum (minimum) along `dim`; ties give the first index.
std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim = false);
std::pair<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim = false);
// The maximum (minimum) over all elements, 0-d.
Tensor max(const Tensor& t);
Tensor min(const Tensor& t);
// Index of the maximum along `dim`, or into the flattened tensor when dim is empty.
Tensor argmax(const Tensor& t, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& t, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
// Variance with Bessel's correction by default (correction = 1).
Tensor var(const Tensor& t, IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false);

}  // namespace strider::ops
