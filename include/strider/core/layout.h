#pragma once
// Stride math: the formulas and predicates of SPEC.md §3-§5 and §7, as pure functions of
// sizes and strides. Everything that decides a layout in strider is built from these.
#include <optional>

#include "strider/core/int_array_ref.h"
#include "strider/core/memory_format.h"

namespace strider::layout {

// §3: strides a fresh tensor of `sizes` gets in format `fmt`. Channels-last formulas have no
// max(., 1), so zeros propagate. Throws the rank errors of §3.4 (with `op` as the prefix).
DimVector contiguous_strides(IntArrayRef sizes);
DimVector channels_last_strides(IntArrayRef sizes);      // rank 4
DimVector channels_last_3d_strides(IntArrayRef sizes);   // rank 5
DimVector strides_for_format(IntArrayRef sizes, MemoryFormat fmt, const char* op);
// Throws unless `fmt` can describe a tensor of rank `dim` (Preserve is accepted).
void check_format_rank(int64_t dim, MemoryFormat fmt, const char* op);

// §4: the predicates behind is_contiguous(fmt), suggest_memory_format and clone.
bool is_contiguous(IntArrayRef sizes, IntArrayRef strides);
bool is_channels_last_contiguous(IntArrayRef sizes, IntArrayRef strides);
bool is_channels_last_3d_contiguous(IntArrayRef sizes, IntArrayRef strides);
bool is_strides_like_channels_last(IntArrayRef sizes, IntArrayRef strides);
bool is_strides_like_channels_last_3d(IntArrayRef sizes, IntArrayRef strides);
bool is_non_overlapping_and_dense(IntArrayRef sizes, IntArrayRef strides);

// The six flags a TensorImpl caches, computed together as PyTorch's refresh_contiguous does.
struct Flags {
  bool is_contiguous = true;
  bool is_channels_last_contiguous = false;
  bool is_channels_last_3d_contiguous = false;
  bool is_strides_like_channels_last = false;
  bool is_strides_like_channels_last_3d = false;
  bool is_non_overlapping_and_dense = true;
};
Flags compute_flags(IntArrayRef sizes, IntArrayRef strides);

// §4.9 with exact_match = false.
MemoryFormat suggest_memory_format(IntArrayRef sizes, IntArrayRef strides);

// §5: dense strides keeping the input's dimension order (used by preserve-format copies).
DimVector infer_dense_strides(IntArrayRef sizes, IntArrayRef strides);

// PyTorch's insertion sort that tolerates ambiguous comparisons (§5): cmp(a, b) > 0 means dim a
// belongs outside dim b, < 0 inside, 0 undecided (keep scanning left without moving).
// perm[0] is the innermost dimension.
template <class Cmp>
void ambiguous_insertion_sort(DimVector& perm, Cmp cmp) {
  const int64_t n = static_cast<int64_t>(perm.size());
  for (int64_t i = 1; i < n; ++i) {
    int64_t cur = i;
    for (int64_t k = i - 1; k >= 0; --k) {
      int c = cmp(perm[k], perm[cur]);
      if (c > 0) {
        std::swap(perm[k], perm[cur]);
        cur = k;
      } else if (c < 0) {
        break;
      }
    }
  }
}

// §7: strides that make `new_sizes` a view of (sizes, strides), or nullopt when none exists.
std::optional<DimVector> view_strides(IntArrayRef sizes, IntArrayRef strides,
                                      IntArrayRef new_sizes);

// NumPy broadcasting of two shapes; throws naming `op` and both shapes when incompatible.
DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op);

// Wraps a possibly negative dimension index into [0, dim); throws when out of range.
int64_t wrap_dim(int64_t d, int64_t dim, const char* op);

}  // namespace strider::layout
