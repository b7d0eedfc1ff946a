#pragma once
// How a unit's gradients travel: the wire format, the collectives that reduce them, and turning
// what arrives back into gradients. The unit never asks which codec it has.
//
//  - AveragingCodec (the default): gradients in the reduce dtype, reduce-scattered (or, for
//    replicated parameters, all-reduced) with ReduceOp::Avg. Float sums depend on how many
//    ranks add them and in which order.
//  - ExactCodec (FSDPOptions::deterministic): float32 gradients go by all-to-all to the rank
//    that owns their chunk, which adds every rank's contribution exactly as integers in two
//    int64 limbs (dist/exact_sum.h): the sum is the same bits for any world size, strategy or
//    order, and the traffic is a float32 reduce-scatter's. Limb chunks are all-reduced across
//    replicas (hybrid), summed over this rank's micro-batches of the step, and divided by the
//    micro-batch count once. Replicated parameters (NoShard) are reduced the same way in blocks
//    and the float result all-gathered: the traffic of an all-reduce.
//
// The wire buffer is rank-major: chunk q (chunk_numel() elements) goes to rank q of the group
// reducing it, and gradient elements sit at the same offsets within a chunk as in the flat shard.
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "strider/core/tensor.h"
#include "strider/dist/process_group.h"

namespace strider::fsdp::detail {

class GradientCodec {
 public:
  // Allocates a tensor of (dtype, numel); the unit routes gradient-sized buffers to offload.
  using Allocate = std::function<Tensor(ScalarType dtype, int64_t numel)>;
  virtual ~GradientCodec() = default;

  virtual int64_t chunk_numel() const = 0;
  // A wire buffer of `chunks` chunks, ready for encode.
  virtual Tensor new_wire(int chunks) const = 0;
  // Writes `values` (1-d, contiguous, a floating dtype; undefined means none) at `offset` of
  // chunk q, then zeros up to `length` elements from offset (padding rows).
  void encode(Tensor& wire, int q, int64_t offset, const Tensor& values, int64_t length) const;
  // Starts reducing `wire` over `group` (null: this rank alone): each rank its chunk, or with
  // `replicated` (one chunk) every rank the whole. Returns the work (null when nothing travels)
  // and the tensor that holds what arrives.
  virtual std::pair<std::shared_ptr<dist::Work>, Tensor> reduce(dist::ProcessGroup* group, const Tensor& wire,
                                                                 bool replicated, const Allocate& allocate) = 0;
  // Once that work is done: this rank's reduced chunk, in the form replicas all-reduce with
  // replica_op(). Frees what arrived.
  virtual Tensor settle(Tensor arrived) = 0;
  virtual dist::ReduceOp replica_op() const = 0;
  // The settled chunk as the gradient segment (`segment` elements of `dtype`), or an undefined
  // tensor while micro-batches of this step are still to come. Replicated: collective over the
  // group reduce() used.
  virtual Tensor decode(const Tensor& chunk, ScalarType dtype, const Allocate& allocate) = 0;
  // Whether what arrives is larger than the settled chunk (then settle it as soon as it is in).
  virtual bool settles_early() const = 0;
  // Whether reduce_in_place takes gradients of `grad_dtype` where they accumulated, laid out like
  // the gathered parameters, so nothing is packed into a wire (the averaging codec, gradients
  // already in the reduce dtype).
  virtual bool reduces_in_place(ScalarType /*grad_dtype*/) const { return false; }
  // reduce() of `grads` in that layout: `pieces` are where each rank's chunk of each parameter
  // lies (FlatLayout::pieces(); `replicated`: one rank, so the layout is the wire).
  virtual std::pair<std::shared_ptr<dist::Work>, Tensor> reduce_in_place(dist::ProcessGroup* group, const Tensor& grads,
                                                                          std::vector<dist::Piece> pieces,
                                                                          bool replicated, const Allocate& allocate);
};

// `segment`: elements of this rank's flat shard (replicated: of the parameters); the averaging
// codec's wire is in `reduce_dtype`. The exact codec sums micro_batches micro-batches per
// step, micro_batches / world of them on this rank; `replicas` ranks all-reduce each of its
// chunks (hybrid) or, `replicated`, share the reduction of the whole.
std::unique_ptr<GradientCodec> make_averaging_codec(int64_t segment, ScalarType reduce_dtype);
std::unique_ptr<GradientCodec> make_exact_codec(int64_t segment, int micro_batches, int world, int replicas,
                                                bool replicated);

}  // namespace strider::fsdp::detail
