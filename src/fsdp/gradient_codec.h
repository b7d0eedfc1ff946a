#pragma once
// How a unit's gradients travel: the wire format of their reduction, its op, and turning this
// rank's reduced chunk back into gradients. The unit never asks which codec it has.
//
//  - AveragingCodec (the default): gradients in the reduce dtype, averaged over the ranks
//    (ReduceOp::Avg). Float sums depend on how many ranks add them and in which order.
//  - ExactCodec (FSDPOptions::deterministic): each micro-batch's gradient as an integer in two
//    int64 limbs (dist/exact_sum.h), summed exactly (ReduceOp::Sum), so the sum is bitwise the
//    same for any world size, strategy or order; divided by the number of micro-batches once
//    this rank's last micro-batch of the step is in.
//
// The wire buffer is rank-major: chunk q (chunk_numel() elements) goes to rank q of the shard
// group; gradient elements sit at the same offsets within a chunk as in the flat shard.
#include <functional>
#include <memory>

#include "strider/core/tensor.h"
#include "strider/dist/process_group.h"

namespace strider::fsdp::detail {

class GradientCodec {
 public:
  virtual ~GradientCodec() = default;
  virtual int64_t chunk_numel() const = 0;
  virtual ScalarType wire_dtype() const = 0;
  virtual dist::ReduceOp op() const = 0;
  // A wire buffer of `chunks` chunks, ready for encode.
  virtual Tensor new_wire(int chunks) const = 0;
  // Writes `values` (1-d, contiguous, a floating dtype; undefined means none) at `offset` of
  // chunk q, then zeros up to `length` elements from offset (padding rows).
  virtual void encode(Tensor& wire, int q, int64_t offset, const Tensor& values, int64_t length) = 0;
  // This rank's reduced chunk as a gradient segment in `dtype`, or an undefined tensor while
  // micro-batches of this step are still to come. `make_segment(dtype)` allocates the result.
  virtual Tensor decode(const Tensor& reduced, ScalarType dtype,
                        const std::function<Tensor(ScalarType)>& make_segment) = 0;
};

// `segment`: elements of this rank's flat shard; `reduce_dtype`: the averaging codec's wire
// dtype. The exact codec sums micro_batches micro-batches per step, micro_batches / world of
// them on this rank; its chunks are padded to a multiple of `align` elements (the replicas that
// all-reduce a chunk), so every rank sends the same bytes.
std::unique_ptr<GradientCodec> make_averaging_codec(int64_t segment, ScalarType reduce_dtype);
std::unique_ptr<GradientCodec> make_exact_codec(int64_t segment, int micro_batches, int world, int align);

}  // namespace strider::fsdp::detail
