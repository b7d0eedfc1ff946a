#include "fsdp/gradient_codec.h"

#include <algorithm>
#include <limits>

#include "strider/dist/exact_sum.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"

namespace strider::fsdp::detail {

void GradientCodec::encode(Tensor& wire, int q, int64_t offset, const Tensor& values, int64_t length) const {
  Tensor dst = wire.narrow(0, q * chunk_numel() + offset, length);
  const int64_t valid = values.defined() ? values.numel() : 0;
  if (valid > 0) ops::copy_(dst.narrow(0, 0, valid), values);
  if (valid < length) ops::zero_(dst.narrow(0, valid, length - valid));
}

std::pair<std::shared_ptr<dist::Work>, Tensor> GradientCodec::reduce_in_place(dist::ProcessGroup*, const Tensor&,
                                                                               std::vector<dist::Piece>, bool,
                                                                               const Allocate&) {
  STRIDER_INTERNAL_ASSERT(false, "this codec packs gradients into its wire; it does not reduce them in place");
  return {};
}

namespace {

class AveragingCodec final : public GradientCodec {
 public:
  AveragingCodec(int64_t segment, ScalarType dtype) : segment_(segment), dtype_(dtype) {}
  int64_t chunk_numel() const override { return segment_; }
  Tensor new_wire(int chunks) const override { return empty({segment_ * chunks}, dtype_); }
  dist::ReduceOp replica_op() const override { return dist::ReduceOp::Avg; }
  bool settles_early() const override { return false; }

  std::pair<std::shared_ptr<dist::Work>, Tensor> reduce(dist::ProcessGroup* group, const Tensor& wire, bool replicated,
                                                         const Allocate& allocate) override {
    if (replicated) return {group ? group->all_reduce_async(wire, dist::ReduceOp::Avg) : nullptr, wire};
    Tensor out = allocate(dtype_, segment_);
    return {group->reduce_scatter_async(out, wire, dist::ReduceOp::Avg), out};
  }

  bool reduces_in_place(ScalarType grad_dtype) const override { return grad_dtype == dtype_; }

  std::pair<std::shared_ptr<dist::Work>, Tensor> reduce_in_place(dist::ProcessGroup* group, const Tensor& grads,
                                                                  std::vector<dist::Piece> pieces, bool replicated,
                                                                  const Allocate& allocate) override {
    if (replicated) return reduce(group, grads, true, allocate);
    Tensor out = allocate(dtype_, segment_);
    return {group->reduce_scatter_pieces_async(out, grads, std::move(pieces), dist::ReduceOp::Avg), out};
  }

  Tensor settle(Tensor arrived) override { return arrived; }

  Tensor decode(const Tensor& chunk, ScalarType dtype, const Allocate& allocate) override {
    if (chunk.dtype() == dtype) return chunk;
    Tensor out = allocate(dtype, segment_);
    ops::copy_(out, chunk.narrow(0, 0, segment_));
    return out;
  }

 private:
  int64_t segment_;
  ScalarType dtype_;
};

// Flat: the wire holds float32 chunks of `segment`; this rank adds the W contributions to its
// chunk into [hi limbs | lo limbs | count of values out of range | zeros], padded to a multiple
// of the replicas that all-reduce it. Replicated: the wire is one chunk split into W blocks;
// this rank reduces its block the same way and all-gathers the float result. With one
// micro-batch per rank and nothing left to add, the sum goes straight to the float mean.
class ExactCodec final : public GradientCodec {
 public:
  ExactCodec(int64_t segment, int micro_batches, int world, int replicas, bool replicated)
      : segment_(segment),
        replicated_(replicated),
        block_(replicated ? (segment + replicas - 1) / replicas : segment),
        wire_chunk_(replicated ? block_ * replicas : segment),
        limb_chunk_(replicated ? 2 * block_ + 1 : (2 * segment + 1 + replicas - 1) / replicas * replicas),
        divisor_(micro_batches),
        rounds_per_step_(micro_batches / world),
        direct_(rounds_per_step_ == 1 && (replicated || replicas == 1)) {}

  int64_t chunk_numel() const override { return wire_chunk_; }
  dist::ReduceOp replica_op() const override { return dist::ReduceOp::Sum; }
  bool settles_early() const override { return true; }

  Tensor new_wire(int chunks) const override {
    Tensor wire = empty({wire_chunk_ * chunks}, kFloat);
    if (wire_chunk_ > segment_) ops::zero_(wire.narrow(0, segment_, wire_chunk_ - segment_));  // replicated padding
    return wire;
  }

  std::pair<std::shared_ptr<dist::Work>, Tensor> reduce(dist::ProcessGroup* group, const Tensor& wire, bool,
                                                         const Allocate& allocate) override {
    group_ = group;
    if (!group || group->size() == 1) return {nullptr, wire};
    Tensor arrived = allocate(kFloat, wire.numel());
    return {group->all_to_all_async(arrived, wire), arrived};
  }

  Tensor settle(Tensor arrived) override {
    const int n = group_ ? group_->size() : 1;
    const int64_t b = arrived.numel() / n;  // this rank's chunk (or block), from each rank
    if (direct_) {  // nothing more to add: straight to the float mean
      Tensor out = empty({b}, kFloat);
      float* o = out.data_ptr<float>();
      if (dist::sum_to_float(arrived.data_ptr<float>(), b, n, b, divisor_, o) != 0) nan_fill(o, b);
      if (!replicated_ || n == 1) return out;
      // Replicated: every rank's block is final, so the all-gather starts now and overlaps the
      // rest of backward (ranks settle at the same points of their identical sequences).
      Tensor whole = empty({wire_chunk_}, kFloat);
      dist::CollectiveLabel label("gradients (deterministic mode)");
      gather_ = group_->all_gather_async(whole, out);
      return whole;
    }
    Tensor limbs = empty({limb_chunk_}, kLong);
    int64_t* hi = limbs.data_ptr<int64_t>();
    int64_t* lo = hi + b;
    std::fill(hi + 2 * b, hi + limb_chunk_, 0);
    hi[2 * b] = dist::sum_to_limbs(arrived.data_ptr<float>(), b, n, b, hi, lo);
    return limbs;
  }

  Tensor decode(const Tensor& chunk, ScalarType dtype, const Allocate& allocate) override {
    const int64_t b = block_;
    if (direct_) {
      if (gather_) gather_->wait();  // the all-gather settle started
      gather_.reset();
      return cast(chunk, dtype, allocate);
    }
    int64_t* r = chunk.data_ptr<int64_t>();
    dist::normalize_limbs(r, r + b, b);  // after the replicas' all-reduce
    const int64_t* sum = r;
    if (rounds_per_step_ > 1) {  // this step's earlier micro-batches: add exactly
      if (rounds_ == 0) {
        total_ = chunk.clone();
      } else {
        int64_t* t = total_.data_ptr<int64_t>();
        for (int64_t i = 0; i < limb_chunk_; ++i) t[i] += r[i];
        dist::normalize_limbs(t, t + b, b);
      }
      if (++rounds_ < rounds_per_step_) return Tensor();
      rounds_ = 0;
      sum = total_.data_ptr<int64_t>();
    }
    Tensor out = replicated_ ? empty({b}, kFloat) : allocate(kFloat, b);
    float* o = out.data_ptr<float>();
    if (sum[2 * b] != 0)  // a contribution was not finite or too large to sum exactly
      nan_fill(o, b);
    else
      dist::limbs_to_float(sum, sum + b, b, divisor_, o);
    total_ = Tensor();
    return finish(out, dtype, allocate);
  }

 private:
  static void nan_fill(float* o, int64_t n) { std::fill(o, o + n, std::numeric_limits<float>::quiet_NaN()); }

  // This rank's float mean: all-gathered when replicated, cast to `dtype`.
  Tensor finish(Tensor out, ScalarType dtype, const Allocate& allocate) {
    if (replicated_ && group_ && group_->size() > 1) {
      Tensor whole = allocate(kFloat, wire_chunk_);
      dist::CollectiveLabel label("gradients (deterministic mode)");
      group_->all_gather(whole, out);
      out = whole;
    }
    return cast(out, dtype, allocate);
  }

  Tensor cast(const Tensor& out, ScalarType dtype, const Allocate& allocate) const {
    if (dtype == kFloat) return out;
    Tensor cast = allocate(dtype, segment_);
    ops::copy_(cast, out.narrow(0, 0, segment_));
    return cast;
  }

  int64_t segment_;
  bool replicated_;
  int64_t block_, wire_chunk_, limb_chunk_;
  double divisor_;
  int rounds_per_step_, rounds_ = 0;
  bool direct_;  // one micro-batch per rank and no replicas to add: settle gives the float mean
  dist::ProcessGroup* group_ = nullptr;  // the group of the last reduce
  std::shared_ptr<dist::Work> gather_;   // replicated, one micro-batch per rank: started by settle
  Tensor total_;                         // limb sums of this step's micro-batches so far
};

}  // namespace

std::unique_ptr<GradientCodec> make_averaging_codec(int64_t segment, ScalarType reduce_dtype) {
  return std::make_unique<AveragingCodec>(segment, reduce_dtype);
}

std::unique_ptr<GradientCodec> make_exact_codec(int64_t segment, int micro_batches, int world, int replicas,
                                                bool replicated) {
  return std::make_unique<ExactCodec>(segment, micro_batches, world, replicas, replicated);
}

}  // namespace strider::fsdp::detail
