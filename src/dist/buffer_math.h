#pragma once
// The little arithmetic the communication layer needs on dense buffers, without depending on
// the ops layer (dist sits directly above core).
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

// Checks a pieces layout against `in` (this rank's pieces) and `out` (all ranks' pieces).
void check_pieces(const Tensor& out, const Tensor& in, const std::vector<Piece>& pieces, int world);

// Copies the pieces of rank q from `segment` (back to back) into their places in `out`.
void scatter_pieces(void* out, const void* segment, const std::vector<Piece>& pieces, int q, size_t item);

}  // namespace strider::dist::detail
