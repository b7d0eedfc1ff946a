#include "fsdp/gradient_codec.h"

#include <algorithm>
#include <limits>

#include "strider/dist/exact_sum.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"

namespace strider::fsdp::detail {
namespace {

class AveragingCodec final : public GradientCodec {
 public:
  AveragingCodec(int64_t segment, ScalarType dtype) : segment_(segment), dtype_(dtype) {}
  int64_t chunk_numel() const override { return segment_; }
  ScalarType wire_dtype() const override { return dtype_; }
  dist::ReduceOp op() const override { return dist::ReduceOp::Avg; }
  Tensor new_wire(int chunks) const override { return empty({segment_ * chunks}, dtype_); }

  void encode(Tensor& wire, int q, int64_t offset, const Tensor& values, int64_t length) override {
    Tensor dst = wire.narrow(0, q * segment_ + offset, length);
    const int64_t valid = values.defined() ? values.numel() : 0;
    if (valid > 0) ops::copy_(dst.narrow(0, 0, valid), values);
    if (valid < length) ops::zero_(dst.narrow(0, valid, length - valid));
  }

  Tensor decode(const Tensor& reduced, ScalarType dtype, const std::function<Tensor(ScalarType)>& make_segment) override {
    if (reduced.dtype() == dtype) return reduced;
    Tensor out = make_segment(dtype);
    ops::copy_(out, reduced);
    return out;
  }

 private:
  int64_t segment_;
  ScalarType dtype_;
};

// A chunk is [hi limbs (segment) | lo limbs (segment) | count of values out of range | zeros],
// padded to a multiple of `align` elements so an all-reduce splits it evenly over the replicas.
class ExactCodec final : public GradientCodec {
 public:
  ExactCodec(int64_t segment, int micro_batches, int world, int align)
      : segment_(segment), chunk_((2 * segment + 1 + align - 1) / align * align), divisor_(micro_batches),
        rounds_per_step_(micro_batches / world) {}
  int64_t chunk_numel() const override { return chunk_; }
  ScalarType wire_dtype() const override { return kLong; }
  dist::ReduceOp op() const override { return dist::ReduceOp::Sum; }

  Tensor new_wire(int chunks) const override {
    Tensor wire = empty({chunk_numel() * chunks}, kLong);
    int64_t* d = wire.data_ptr<int64_t>();
    for (int q = 0; q < chunks; ++q) std::fill(d + q * chunk_ + 2 * segment_, d + (q + 1) * chunk_, 0);
    return wire;
  }

  void encode(Tensor& wire, int q, int64_t offset, const Tensor& values, int64_t length) override {
    int64_t* chunk = wire.data_ptr<int64_t>() + q * chunk_numel();
    int64_t* hi = chunk + offset;
    int64_t* lo = chunk + segment_ + offset;
    const int64_t valid = values.defined() ? values.numel() : 0;
    std::fill(hi + valid, hi + length, 0);
    std::fill(lo + valid, lo + length, 0);
    if (valid == 0) return;
    const Tensor f = values.dtype() == kFloat && values.is_contiguous() ? values : values.to(kFloat).contiguous();
    chunk[2 * segment_] += dist::to_limbs(f.data_ptr<float>(), valid, hi, lo);
  }

  Tensor decode(const Tensor& reduced, ScalarType dtype, const std::function<Tensor(ScalarType)>& make_segment) override {
    int64_t* r = reduced.data_ptr<int64_t>();
    dist::normalize_limbs(r, r + segment_, segment_);
    const int64_t* sum = r;
    if (rounds_per_step_ > 1) {  // this step's earlier micro-batches: add exactly
      if (rounds_ == 0) {
        total_ = reduced.clone();
      } else {
        int64_t* t = total_.data_ptr<int64_t>();
        for (int64_t i = 0; i < chunk_numel(); ++i) t[i] += r[i];
        dist::normalize_limbs(t, t + segment_, segment_);
      }
      if (++rounds_ < rounds_per_step_) return Tensor();
      rounds_ = 0;
      sum = total_.data_ptr<int64_t>();
    }
    Tensor out = make_segment(kFloat);
    float* o = out.data_ptr<float>();
    if (sum[2 * segment_] != 0)  // some rank's gradient was not finite or too large to sum exactly
      std::fill(o, o + segment_, std::numeric_limits<float>::quiet_NaN());
    else
      dist::limbs_to_float(sum, sum + segment_, segment_, divisor_, o);
    total_ = Tensor();
    if (dtype == kFloat) return out;
    Tensor cast = make_segment(dtype);
    ops::copy_(cast, out);
    return cast;
  }

 private:
  int64_t segment_, chunk_;
  double divisor_;
  int rounds_per_step_, rounds_ = 0;
  Tensor total_;  // limb sums of this step's micro-batches so far
};

}  // namespace

std::unique_ptr<GradientCodec> make_averaging_codec(int64_t segment, ScalarType reduce_dtype) {
  return std::make_unique<AveragingCodec>(segment, reduce_dtype);
}

std::unique_ptr<GradientCodec> make_exact_codec(int64_t segment, int micro_batches, int world, int align) {
  return std::make_unique<ExactCodec>(segment, micro_batches, world, align);
}

}  // namespace strider::fsdp::detail
