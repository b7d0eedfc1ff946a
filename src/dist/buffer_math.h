#pragma once
// The little arithmetic the communication layer needs on dense buffers, without depending on
// the ops layer (dist sits directly above core).
#include <algorithm>
#include <cstring>

#include "core/make_tensor.h"
#include "strider/core/dispatch.h"
#include "strider/core/tensor.h"
#include "strider/dist/process_group.h"

namespace strider::dist::detail {

// t *= factor over a dense tensor of any dtype.
inline void scale_in_place(const Tensor& t, double factor) {
  dispatch_all(t.dtype(), "all_reduce", [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      T* p = static_cast<T*>(t.data());
      for (int64_t i = 0; i < t.numel(); ++i)
        store_as(p[i], static_cast<double>(static_cast<opmath_t<T>>(p[i])) * factor);
    }
  });
}

// A collective is about to write `t`: values derived from its old contents (oneDNN's reordered
// weights) must not be reused (StorageImpl::generation).
inline void mark_written(const Tensor& t) {
  if (t.defined() && t.storage()) t.storage()->bump_generation();
}

// A new 1-d tensor of `n` elements (dist sits below ops: core's make_tensor, not ops::empty).
inline Tensor flat_buffer(int64_t n, ScalarType dtype) { return make_tensor({n}, {1}, dtype); }

// Byte copy between two dense tensors of one dtype and element count.
inline void copy_dense(const Tensor& dst, const Tensor& src) {
  if (dst.data() != src.data()) std::memcpy(dst.data(), src.data(), src.nbytes());
}

// all_gather, reduce_scatter and all_to_all move blocks of the flattened logical order, which
// are blocks of memory only in row-major tensors: anything else (channels-last, a transpose) is
// an Error naming the fix, where copying storage order gave other elements (PyTorch's
// all_gather_into_tensor requires contiguous tensors too).
void check_block_layout(const Tensor& t, const char* op, const char* which);
// all_gather's input may be this rank's own block of the output (gathering in place, as
// PyTorch's all_gather_into_tensor allows): true then. An input overlapping the output anywhere
// else is an Error (it would be overwritten while it is sent).
bool gathers_in_place(const Tensor& out, const Tensor& in, int rank, const char* op);
// MPI has no reduction over bool (MPI_C_BOOL takes only logical ops): refused before anything
// is sent, as gloo refuses it, instead of MPI aborting every rank.
void check_reducible(ScalarType dtype, const char* op);
// shift and a world of one copy storage to storage: the layouts must agree.
void check_same_layout(const Tensor& out, const Tensor& in, const char* op);

// Checks a pieces layout against `segment` (one rank's pieces) and `gathered` (all ranks' pieces).
void check_pieces(const Tensor& gathered, const Tensor& segment, const std::vector<Piece>& pieces, int world,
                  const char* op = "all_gather_pieces");

// Copies the pieces of rank q from `segment` (back to back) into their places in `out`.
void scatter_pieces(void* out, const void* segment, const std::vector<Piece>& pieces, int q, size_t item);
// The inverse: copies rank q's pieces from their places in `in` into `segment`, back to back.
void gather_pieces(void* segment, const void* in, const std::vector<Piece>& pieces, int q, size_t item);

// Elements [first, first + n) of rank q's segment of a pieces layout, as runs of contiguous
// memory in `base`: fn(position in the range, pointer to the run, elements in the run).
template <class Fn>
void for_each_piece_run(const char* base, const std::vector<Piece>& pieces, int q, int64_t first, int64_t n,
                        size_t item, Fn&& fn) {
  int64_t start = 0;  // where piece j begins in the segment
  for (const Piece& p : pieces) {
    const int64_t lo = std::max(first, start), hi = std::min(first + n, start + p.length);
    if (lo < hi) fn(lo - first, base + static_cast<size_t>(p.offset + q * p.length + (lo - start)) * item, hi - lo);
    start += p.length;
    if (start >= first + n) break;
  }
}

}  // namespace strider::dist::detail
