#pragma once
// Operations along one dimension, line by line: sorting, the k largest or smallest, running
// sums, and gathering or scatter-adding by an index tensor. Without autograd (the
// differentiable forms are in autograd/functions.h). Layouts are PyTorch 1.13's: sort keeps the
// input's memory format; topk, cumsum, gather and scatter_add give contiguous results.
#include <optional>
#include <utility>

#include "strider/core/tensor.h"

namespace strider::ops {

// Values and int64 indices along `dim`, ascending (descending when asked); NaN sorts above every
// number, as PyTorch's. The sort is stable (equal values keep their order), as PyTorch's CPU sort.
std::pair<Tensor, Tensor> sort(const Tensor& t, int64_t dim = -1, bool descending = false);
// The k largest (smallest) along `dim`, in sorted order (also for sorted = false, where PyTorch
// leaves the order open); ties keep the lower index first. k must be at most the dim's size.
std::pair<Tensor, Tensor> topk(const Tensor& t, int64_t k, int64_t dim = -1, bool largest = true);
// Running sums along `dim` (reverse: from the end, the sort of sum cumsum's gradient is);
// integral and bool inputs give int64 unless `dtype` says otherwise; floating sums accumulate in
// float64, as PyTorch's CPU kernel.
Tensor cumsum(const Tensor& t, int64_t dim, std::optional<ScalarType> dtype = std::nullopt, bool reverse = false);
// out[..i..] = t[..index[..i..]..] with the index in place of the coordinate along `dim`: the
// index (int64, as many dims as t, each no larger than t's except along dim) gives out's shape.
Tensor gather(const Tensor& t, int64_t dim, const Tensor& index);
// A copy of self with src[..i..] added at self[..index[..i..]..] (the index's shape, within
// src's and, except along dim, self's); gather's adjoint.
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);

}  // namespace strider::ops
