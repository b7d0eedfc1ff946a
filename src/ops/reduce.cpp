// Reductions: decide the (contiguous) output, then hand the kernel a keepdim view with stride 0
// along each reduced dimension.
#include "strider/ops/reduce.h"

#include <vector>

#include "core/make_tensor.h"
#include "kernels/reduce.h"
#include "ops/kernel_dispatch.h"
#include "strider/core/layout.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"
#include "strider/ops/view.h"

namespace strider::ops {
namespace {

using kernels::ReduceOp;

std::vector<bool> reduced_mask(const Tensor& t, IntArrayRef dims, const char* op) {
  std::vector<bool> mask(t.dim(), dims.empty());
  for (int64_t d : dims) {
    int64_t w = layout::wrap_dim(d, t.dim(), op);
    if (t.dim() == 0) continue;  // dim 0 or -1 of a 0-d tensor (PyTorch's rule): nothing to reduce
    STRIDER_CHECK(!mask[w] || dims.empty(), op, "dim ", w, " appears multiple times in the list of dims ", dims);
    mask[w] = true;
  }
  return mask;
}

// The table's empty and dtype_rule columns (core/reduce_table.h).
enum class EmptyResult { Zero, One, NaN, Refused };
constexpr EmptyResult empty_result(ReduceOp op) {
#define STRIDER_EMPTY(Enum, function, name, signature, rule, empty, ...) \
  if (op == ReduceOp::Enum) return EmptyResult::empty;
  STRIDER_REDUCE_OPS(STRIDER_EMPTY)
#undef STRIDER_EMPTY
  return EmptyResult::NaN;
}

ScalarType sum_dtype(ScalarType t) { return is_integral(t, true) ? kLong : t; }

ScalarType floating_only(const Tensor& t, const char* op) {
  STRIDER_CHECK(is_floating_point(t.dtype()), op, "could not infer output dtype: input dtype ",
                t.dtype(), " is not floating point (shape ", t.sizes(),
                "); convert with .to(kFloat) first");
  return t.dtype();
}

enum class DtypeRule { Same, Long, IntegersToLong, FloatingOnly };
constexpr DtypeRule dtype_rule(ReduceOp op) {
#define STRIDER_RULE(Enum, function, name, signature, rule, ...) \
  if (op == ReduceOp::Enum) return DtypeRule::rule;
  STRIDER_REDUCE_OPS(STRIDER_RULE)
#undef STRIDER_RULE
  return DtypeRule::Same;
}

ScalarType result_dtype(ReduceOp op, const Tensor& t) {
  switch (dtype_rule(op)) {
    case DtypeRule::Same: return t.dtype();
    case DtypeRule::Long: return kLong;
    case DtypeRule::IntegersToLong: return sum_dtype(t.dtype());
    case DtypeRule::FloatingOnly: return floating_only(t, kernels::name(op));
  }
  return t.dtype();
}

Tensor reduce(ReduceOp op, const Tensor& t, IntArrayRef dims, bool keepdim, ScalarType out_dtype,
              kernels::ReduceArgs args = {}) {
  const char* name = kernels::name(op);
  STRIDER_CHECK(t.defined(), name, "input tensor is undefined");
  std::vector<bool> mask = reduced_mask(t, dims, name);
  DimVector out_sizes, keep_sizes;
  int64_t length = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (mask[d]) {
      length *= t.sizes()[d];
      keep_sizes.push_back(1);
      if (keepdim) out_sizes.push_back(1);
    } else {
      keep_sizes.push_back(t.sizes()[d]);
      out_sizes.push_back(t.sizes()[d]);
    }
  }
  const EmptyResult empty = empty_result(op);
  STRIDER_CHECK(empty != EmptyResult::Refused || length > 0 || product(out_sizes) == 0, name,
                "cannot reduce over a zero-size dimension (input shape ", t.sizes(), ", dims ", dims,
                "): the result has no identity; reduce over non-empty dims");
  Tensor out = make_tensor(out_sizes, layout::contiguous_strides(out_sizes), out_dtype);
  // Keepdim view for the kernel: input's sizes, stride 0 where reduced.
  DimVector keep_strides = layout::contiguous_strides(keep_sizes), view_strides(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) view_strides[d] = mask[d] ? 0 : keep_strides[d];
  Tensor kview = as_strided(out, t.sizes(), view_strides, 0);
  if (length == 0) {
    fill_(out, empty == EmptyResult::One ? 1.0 : (empty == EmptyResult::Zero ? 0.0 : NAN));
    return out;
  }
  kernels::reduce({op, kview, t, args}, dispatch(name));
  return out;
}

// The index into the flattened tensor; with keepdim, shaped [1, ..., 1] as PyTorch shapes it.
Tensor flat_index(const Tensor& index, const Tensor& t, bool keepdim) {
  return keepdim ? reshape(index, DimVector(static_cast<size_t>(t.dim()), 1)) : index;
}

}  // namespace

// The table's rows (core/reduce_table.h), by signature.
#define STRIDER_REDUCE_FUNCTION(Enum, function, name, signature, ...) STRIDER_REDUCE_##signature(Enum, function)
#define STRIDER_REDUCE_Dims(Enum, function)                                          \
  Tensor function(const Tensor& t, IntArrayRef dims, bool keepdim) {                \
    return reduce(ReduceOp::Enum, t, dims, keepdim, result_dtype(ReduceOp::Enum, t)); \
  }
#define STRIDER_REDUCE_DimsDtype(Enum, function)                                                        \
  Tensor function(const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) { \
    ScalarType out = dtype.value_or(result_dtype(ReduceOp::Enum, t));                                   \
    Tensor in = dtype && *dtype != t.dtype() ? to(t, *dtype) : t;                                       \
    return reduce(ReduceOp::Enum, in, dims, keepdim, out);                                              \
  }
#define STRIDER_REDUCE_Correction(Enum, function)                                          \
  Tensor function(const Tensor& t, IntArrayRef dims, int64_t correction, bool keepdim) { \
    kernels::ReduceArgs args;                                                              \
    args.correction = correction;                                                          \
    return reduce(ReduceOp::Enum, t, dims, keepdim, result_dtype(ReduceOp::Enum, t), args); \
  }
#define STRIDER_REDUCE_OptionalDim(Enum, function)                                                    \
  Tensor function(const Tensor& t, std::optional<int64_t> dim, bool keepdim) {                       \
    if (!dim) return flat_index(reduce(ReduceOp::Enum, reshape(t, {-1}), {}, false, result_dtype(ReduceOp::Enum, t)), t, keepdim); \
    return reduce(ReduceOp::Enum, t, {*dim}, keepdim, result_dtype(ReduceOp::Enum, t));               \
  }
STRIDER_REDUCE_OPS(STRIDER_REDUCE_FUNCTION)

// max and min over all elements, or along one dim with the index: the Amax/Amin and
// Argmax/Argmin rows' kernels.
std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim) {
  const int64_t d = t.dim() == 0 ? 0 : layout::wrap_dim(dim, t.dim(), "max");
  if (t.dim() == 0) return {clone(t), scalar_tensor(Scalar(int64_t{0}), kLong)};
  return {reduce(ReduceOp::Amax, t, {d}, keepdim, t.dtype()),
          reduce(ReduceOp::Argmax, t, {d}, keepdim, kLong)};
}
std::pair<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim) {
  const int64_t d = t.dim() == 0 ? 0 : layout::wrap_dim(dim, t.dim(), "min");
  if (t.dim() == 0) return {clone(t), scalar_tensor(Scalar(int64_t{0}), kLong)};
  return {reduce(ReduceOp::Amin, t, {d}, keepdim, t.dtype()),
          reduce(ReduceOp::Argmin, t, {d}, keepdim, kLong)};
}
Tensor max(const Tensor& t) { return reduce(ReduceOp::Amax, t, {}, false, t.dtype()); }
Tensor min(const Tensor& t) { return reduce(ReduceOp::Amin, t, {}, false, t.dtype()); }

}  // namespace strider::ops
