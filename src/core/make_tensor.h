#pragma once
// The one construction path for tensors: every TensorImpl the library makes (ops' outputs,
// kernels' scratch, the communicator's and FSDP's flat buffers, views, detached aliases,
// from_blob, deferred stand-ins) is made here, so a tensor's invariants live in one file.
#include "strider/core/tensor.h"

namespace strider {

// Elements the storage must hold for (sizes, strides) starting at offset 0 (0 when a size is 0).
// Throws when the span overflows 64 bits.
int64_t storage_span(IntArrayRef sizes, IntArrayRef strides);

// A tensor with this geometry over fresh, uninitialized memory from `allocator`: storage_span
// elements of `dtype`, offset 0. Throws on a negative stride or a byte count past 64 bits.
Tensor make_tensor(DimVector sizes, DimVector strides, ScalarType dtype, Allocator& allocator = cpu_allocator());

// A tensor over a storage the caller made (memory it owns, a stand-in without memory). The
// geometry is not checked against the storage's size.
Tensor make_tensor(Storage storage, ScalarType dtype, DimVector sizes, DimVector strides, int64_t storage_offset);

// A new TensorImpl on t's storage with t's dtype, sizes, strides and offset, and no autograd
// state: the same bytes under a handle whose graph state is its own (detach, saved tensors).
Tensor alias(const Tensor& t);

// A new TensorImpl on t's storage with t's dtype and this geometry (views), no autograd state.
Tensor alias_with(const Tensor& t, DimVector sizes, DimVector strides, int64_t storage_offset);

}  // namespace strider
