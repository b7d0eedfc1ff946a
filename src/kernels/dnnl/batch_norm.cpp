// Batch normalization primitives, cached by shape, layout, dtype and mode.
#include "kernels/dnnl/context.h"
#include "kernels/norm.h"

namespace strider::kernels::dnnl_ops {
namespace {

using dnnl::memory;
using flags = dnnl::normalization_flags;

flags make_flags(bool affine, bool training) {
  flags f = flags::none;
  if (affine) f = f | flags::use_scale | flags::use_shift;
  if (!training) f = f | flags::use_global_stats;
  return f;
}

struct FwdEntry {
  dnnl::batch_normalization_forward::primitive_desc pd;
  dnnl::batch_normalization_forward prim;
};
struct BwdEntry {
  dnnl::batch_normalization_backward prim;
};

dnnl::batch_normalization_forward::primitive_desc forward_pd(const Tensor& in, bool affine, bool training, double eps) {
  dnnl::batch_normalization_forward::desc d(
      training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference, desc_of(in),
      static_cast<float>(eps), make_flags(affine, training));
  return dnnl::batch_normalization_forward::primitive_desc(d, attr(), engine());
}

std::string key(const char* op, const Tensor& in, bool affine, bool training, double eps) {
  KeyBuilder k(op);
  k.add(in).add(static_cast<int64_t>(affine)).add(static_cast<int64_t>(training)).add(static_cast<int64_t>(eps * 1e12));
  return k.str();
}

}  // namespace

void batch_norm_forward(const BatchNormForward& p) {
  const Tensor &out = p.out, &in = p.in, &weight = p.weight, &bias = p.bias, &mean = p.mean, &var = p.var;
  const bool training = p.training;
  const double eps = p.eps;
  auto& cache = dnnl_ops::cache<FwdEntry>();
  const bool affine = weight.defined();
  const FwdEntry& e = cache.get(key("bn_fwd", in, affine, training, eps), [&] {
    auto pd = forward_pd(in, affine, training, eps);
    return FwdEntry{pd, dnnl::batch_normalization_forward(pd)};
  });
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, memory_of(in)}, {DNNL_ARG_DST, memory_of(out)},
                                          {DNNL_ARG_MEAN, memory_of(mean)}, {DNNL_ARG_VARIANCE, memory_of(var)}};
  if (affine) {
    args.emplace(DNNL_ARG_SCALE, memory_of(weight));
    args.emplace(DNNL_ARG_SHIFT, memory_of(bias));
  }
  execute(e.prim, std::move(args));
}

void batch_norm_backward(const BatchNormBackward& p) {
  const Tensor &grad_in = p.grad_in, &grad_out = p.grad_out, &in = p.in, &weight = p.weight, &mean = p.mean, &var = p.var;
  const bool training = p.training;
  const double eps = p.eps;
  auto& cache = dnnl_ops::cache<BwdEntry>();
  const bool affine = weight.defined();
  KeyBuilder k("bn_bwd");
  k.add(in).add(grad_out).add(static_cast<int64_t>(affine)).add(static_cast<int64_t>(training)).add(static_cast<int64_t>(eps * 1e12));
  const BwdEntry& e = cache.get(k.str(), [&] {
    auto hint = forward_pd(in, affine, training, eps);
    dnnl::batch_normalization_backward::desc d(
        affine ? dnnl::prop_kind::backward : dnnl::prop_kind::backward_data, desc_of(grad_out), desc_of(in),
        static_cast<float>(eps), make_flags(affine, training));
    dnnl::batch_normalization_backward::primitive_desc pd(d, attr(), engine(), hint);
    return BwdEntry{dnnl::batch_normalization_backward(pd)};
  });
  // Scale gradients are always produced with affine parameters; unwanted ones go to scratch.
  Tensor gw = p.grad_weight, gb = p.grad_bias;
  if (affine && !gw.defined()) gw = scratch_like(weight);
  if (affine && !gb.defined()) gb = scratch_like(weight);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory_of(in)}, {DNNL_ARG_DIFF_DST, memory_of(grad_out)},
      {DNNL_ARG_MEAN, memory_of(mean)}, {DNNL_ARG_VARIANCE, memory_of(var)},
      {DNNL_ARG_DIFF_SRC, memory_of(grad_in)}};
  if (affine) {
    args.emplace(DNNL_ARG_SCALE, memory_of(weight));
    args.emplace(DNNL_ARG_SHIFT, memory_of(gb));  // read by some implementations, not by the math
    args.emplace(DNNL_ARG_DIFF_SCALE, memory_of(gw));
    args.emplace(DNNL_ARG_DIFF_SHIFT, memory_of(gb));
  }
  execute(e.prim, std::move(args));
}

}  // namespace strider::kernels::dnnl_ops
