#include "strider/core/layout.h"

#include <algorithm>

#include "strider/core/error.h"

namespace strider::layout {

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector st(sizes.size());
  int64_t acc = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    st[d] = acc;
    acc *= std::max<int64_t>(sizes[d], 1);
  }
  return st;
}

DimVector channels_last_strides(IntArrayRef s) {
  STRIDER_INTERNAL_ASSERT(s.size() == 4);
  int64_t c = s[1], w = s[3], h = s[2];
  return {c * w * h, 1, c * w, c};
}

DimVector channels_last_3d_strides(IntArrayRef s) {
  STRIDER_INTERNAL_ASSERT(s.size() == 5);
  int64_t c = s[1], d = s[2], h = s[3], w = s[4];
  return {c * w * h * d, 1, c * w * h, c * w, c};
}

void check_format_rank(int64_t dim, MemoryFormat fmt, const char* op) {
  STRIDER_CHECK(fmt != MemoryFormat::ChannelsLast || dim == 4, op,
                "required rank 4 tensor to use channels_last format, but the tensor has rank ",
                dim, "; channels_last describes NCHW tensors only (use channels_last_3d for 5-d)");
  STRIDER_CHECK(fmt != MemoryFormat::ChannelsLast3d || dim == 5, op,
                "required rank 5 tensor to use channels_last_3d format, but the tensor has rank ",
                dim, "; channels_last_3d describes NCDHW tensors only (use channels_last for 4-d)");
}

DimVector strides_for_format(IntArrayRef sizes, MemoryFormat fmt, const char* op) {
  check_format_rank(static_cast<int64_t>(sizes.size()), fmt, op);
  switch (fmt) {
    case MemoryFormat::Contiguous: return contiguous_strides(sizes);
    case MemoryFormat::ChannelsLast: return channels_last_strides(sizes);
    case MemoryFormat::ChannelsLast3d: return channels_last_3d_strides(sizes);
    case MemoryFormat::Preserve: break;
  }
  STRIDER_CHECK(false, op, "unsupported memory format Preserve: a new tensor needs an explicit "
                "format (contiguous, channels_last or channels_last_3d)");
  return {};
}

bool is_contiguous(IntArrayRef sizes, IntArrayRef strides) {
  if (product(sizes) == 0) return true;
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

namespace {

template <size_t N>
bool is_dense_in_order(IntArrayRef sizes, IntArrayRef strides, const int (&order)[N]) {
  int64_t expected = 1;
  for (int d : order) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

// §4.5: strides non-decreasing in the format's order (gaps allowed, size-1 strides counted).
template <size_t N>
bool strides_like_order(IntArrayRef sizes, IntArrayRef strides, const int (&order)[N]) {
  if (strides[1] == 0) return false;
  int64_t min = 0;
  for (int d : order) {
    if (sizes[d] == 0) return false;
    if (strides[d] < min) return false;
    if (d == 0 && min == strides[1]) return false;  // N111 ambiguity resolves to NCHW
    min = strides[d];
    if (sizes[d] > 1) min *= sizes[d];
  }
  return true;
}

constexpr int kOrder2d[] = {1, 3, 2, 0};
constexpr int kOrder3d[] = {1, 4, 3, 2, 0};

bool non_overlapping_and_dense_raw(IntArrayRef sizes, IntArrayRef strides) {
  const size_t n = sizes.size();
  if (n == 0) return true;
  if (n == 1) return sizes[0] < 2 || strides[0] == 1;
  DimVector perm;
  for (size_t d = 0; d < n; ++d)
    if (sizes[d] >= 2) perm.push_back(static_cast<int64_t>(d));
  // Stable insertion sort by stride; ranks are tiny and this runs on every tensor creation.
  for (size_t i = 1; i < perm.size(); ++i)
    for (size_t j = i; j > 0 && strides[perm[j]] < strides[perm[j - 1]]; --j)
      std::swap(perm[j], perm[j - 1]);
  int64_t require = 1;
  for (int64_t d : perm) {
    if (strides[d] != require) return false;
    require *= sizes[d];
  }
  return true;
}

}  // namespace

bool is_channels_last_contiguous(IntArrayRef sizes, IntArrayRef strides) {
  return sizes.size() == 4 && is_dense_in_order(sizes, strides, kOrder2d);
}
bool is_channels_last_3d_contiguous(IntArrayRef sizes, IntArrayRef strides) {
  return sizes.size() == 5 && is_dense_in_order(sizes, strides, kOrder3d);
}
bool is_strides_like_channels_last(IntArrayRef sizes, IntArrayRef strides) {
  return sizes.size() == 4 && strides_like_order(sizes, strides, kOrder2d);
}
bool is_strides_like_channels_last_3d(IntArrayRef sizes, IntArrayRef strides) {
  return sizes.size() == 5 && strides_like_order(sizes, strides, kOrder3d);
}
bool is_non_overlapping_and_dense(IntArrayRef sizes, IntArrayRef strides) {
  return compute_flags(sizes, strides).is_non_overlapping_and_dense;
}

Flags compute_flags(IntArrayRef sizes, IntArrayRef strides) {
  Flags f;
  f.is_contiguous = is_contiguous(sizes, strides);
  if (sizes.size() == 4) {
    f.is_channels_last_contiguous = is_channels_last_contiguous(sizes, strides);
    f.is_strides_like_channels_last = is_strides_like_channels_last(sizes, strides);
  } else if (sizes.size() == 5) {
    f.is_channels_last_3d_contiguous = is_channels_last_3d_contiguous(sizes, strides);
    f.is_strides_like_channels_last_3d = is_strides_like_channels_last_3d(sizes, strides);
  }
  f.is_non_overlapping_and_dense = f.is_contiguous || f.is_channels_last_contiguous ||
                                   f.is_channels_last_3d_contiguous ||
                                   non_overlapping_and_dense_raw(sizes, strides);
  return f;
}

MemoryFormat suggest_memory_format(IntArrayRef sizes, IntArrayRef strides) {
  if (is_strides_like_channels_last(sizes, strides)) return MemoryFormat::ChannelsLast;
  if (is_strides_like_channels_last_3d(sizes, strides)) return MemoryFormat::ChannelsLast3d;
  return MemoryFormat::Contiguous;
}

DimVector infer_dense_strides(IntArrayRef sizes, IntArrayRef strides) {
  const int64_t n = static_cast<int64_t>(sizes.size());
  if (n == 0) return {};
  if (n == 1) return {1};
  DimVector perm(n);
  for (int64_t i = 0; i < n; ++i) perm[i] = n - 1 - i;
  ambiguous_insertion_sort(perm, [&](int64_t a, int64_t b) {
    int64_t sa = strides[a], sb = strides[b];
    if (sa == 0 || sb == 0) return 0;
    if (sa < sb) return -1;
    if (sa > sb) return 1;
    return sizes[a] > sizes[b] ? 1 : 0;
  });
  DimVector out(n);
  int64_t cur = 1;
  for (int64_t d : perm) {
    out[d] = cur;
    if (sizes[d] > 1) cur *= sizes[d];
  }
  return out;
}

std::optional<DimVector> view_strides(IntArrayRef old_sizes, IntArrayRef old_strides,
                                      IntArrayRef new_sizes) {
  const int64_t new_dim = static_cast<int64_t>(new_sizes.size());
  if (old_sizes.empty()) return DimVector(new_dim, 1);
  const int64_t n = product(old_sizes);
  if (n == 0) {
    if (old_sizes == new_sizes) return old_strides.vec();
    return contiguous_strides(new_sizes);
  }
  DimVector new_strides(new_dim, 0);
  int64_t view_d = new_dim - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t td = static_cast<int64_t>(old_sizes.size()) - 1; td >= 0; --td) {
    tensor_numel *= old_sizes[td];
    // A chunk ends where the next-outer dim is neither size 1 nor stacked right on this chunk.
    if (td == 0 || (old_sizes[td - 1] != 1 &&
                    old_strides[td - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (td > 0) {
        chunk_base_stride = old_strides[td - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  DimVector out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    STRIDER_CHECK(da == db || da == 1 || db == 1, op, "The size of tensor a (", da,
                  ") must match the size of tensor b (", db, ") at non-singleton dimension ", i,
                  "; shapes ", a, " and ", b, " are not broadcastable");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t wrap_dim(int64_t d, int64_t dim, const char* op) {
  int64_t lo = dim == 0 ? -1 : -dim, hi = dim == 0 ? 0 : dim - 1;
  STRIDER_CHECK(d >= lo && d <= hi, op, "dimension out of range (expected to be in range of [",
                lo, ", ", hi, "], but got ", d, ") for a tensor of rank ", dim);
  if (d < 0) d += dim == 0 ? 1 : dim;
  return d;
}

}  // namespace strider::layout
