#include "ops/pointwise_layout.h"

#include "strider/core/layout.h"

namespace strider::ops {
namespace {

// ScalarType with an "undefined" state for the three priority classes of result_type.
struct MaybeType {
  bool defined = false;
  ScalarType type = kFloat;
};

MaybeType promote_skip_undefined(MaybeType a, MaybeType b) {
  if (!a.defined) return b;
  if (!b.defined) return a;
  return {true, promote_types(a.type, b.type)};
}

// PyTorch's combine_categories: the higher-priority class wins unless the lower one is of a
// higher category (bool < integral < floating).
MaybeType combine_categories(MaybeType higher, MaybeType lower) {
  if (higher.defined && is_floating_point(higher.type)) return higher;
  if ((higher.defined && higher.type == kBool) || (lower.defined && is_floating_point(lower.type)))
    return promote_skip_undefined(higher, lower);
  if (higher.defined) return higher;
  return lower;
}

}  // namespace

ScalarType result_type(std::span<const PointwiseInput> inputs) {
  MaybeType dim_result, zero_result, wrapped_result;
  for (const auto& in : inputs) {
    ScalarType t = in.tensor.dtype();
    if (in.wrapped) {
      // A wrapped float counts as the default dtype (float32), an integer as int64.
      if (is_floating_point(t)) t = kFloat;
      wrapped_result = promote_skip_undefined(wrapped_result, {true, t});
    } else if (in.tensor.dim() == 0) {
      zero_result = promote_skip_undefined(zero_result, {true, t});
    } else {
      dim_result = promote_skip_undefined(dim_result, {true, t});
    }
  }
  MaybeType r = combine_categories(dim_result, combine_categories(zero_result, wrapped_result));
  return r.defined ? r.type : kFloat;
}

bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating_point(from) && is_integral(to, /*include_bool=*/true)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

OutputGeometry pointwise_output_geometry(std::span<const Tensor* const> inputs, const char* op) {
  // Shape, and whether every input has the same shape without mixing 0-d and n-d (§8.3).
  DimVector shape;
  bool same = true, has_scalar = false, has_tensor = false, first = true;
  for (const Tensor* t : inputs) {
    (t->dim() == 0 ? has_scalar : has_tensor) = true;
    if (has_scalar && has_tensor) same = false;
    if (first) {
      shape = t->sizes().vec();
      first = false;
    } else if (t->sizes() != IntArrayRef(shape)) {
      same = false;
      shape = layout::broadcast_shapes(shape, t->sizes(), op);
    }
  }
  const int64_t nd = static_cast<int64_t>(shape.size());
  // Fast paths (§8.4), in PyTorch's precedence.
  if (same) {
    bool all_contig = true, all_cl = true, all_noad = true, same_strides = true;
    for (const Tensor* t : inputs) {
      all_contig &= t->is_contiguous();
      all_cl &= t->is_contiguous(MemoryFormat::ChannelsLast);
      all_noad &= t->is_non_overlapping_and_dense();
      same_strides &= t->strides() == inputs.back()->strides();
    }
    if (all_contig) return {shape, layout::contiguous_strides(shape)};
    if (all_cl) return {shape, layout::channels_last_strides(shape)};
    if (all_noad && same_strides) return {shape, inputs.back()->strides().vec()};
  }
  if (nd == 0) return {shape, {}};
  if (nd == 1) return {shape, {1}};
  // General path (§8.5): broadcast strides, then order dims; the first input with non-zero
  // strides in both dims decides each comparison.
  std::vector<DimVector> bstrides;
  bstrides.reserve(inputs.size());
  for (const Tensor* t : inputs) {
    DimVector b(nd, 0);
    const int64_t off = nd - t->dim();
    for (int64_t i = 0; i < t->dim(); ++i)
      b[off + i] = (t->sizes()[i] == 1 && shape[off + i] != 1) ? 0 : t->strides()[i];
    bstrides.push_back(std::move(b));
  }
  DimVector perm(nd);
  for (int64_t i = 0; i < nd; ++i) perm[i] = nd - 1 - i;
  layout::ambiguous_insertion_sort(perm, [&](int64_t a, int64_t b) {
    for (const auto& s : bstrides) {
      if (s[a] == 0 || s[b] == 0) continue;
      if (s[a] < s[b]) return -1;
      if (s[a] > s[b]) return 1;
      if (shape[a] > shape[b]) return 1;
    }
    return 0;
  });
  bool identity = true;
  for (int64_t i = 0; i < nd; ++i) identity &= perm[i] == nd - 1 - i;
  if (identity) return {shape, layout::contiguous_strides(shape)};
  DimVector out(nd);
  int64_t cur = 1;
  for (int64_t d : perm) {
    out[d] = cur;
    cur *= shape[d];  // no max(., 1): a size-0 dim zeroes every stride outside it
  }
  return {shape, out};
}

}  // namespace strider::ops
