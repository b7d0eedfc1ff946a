// Layer normalization primitives (training forward and backward), cached by shape and dtype.
#include "kernels/dnnl/context.h"
#include "kernels/norm.h"

namespace strider::kernels::dnnl_ops {
namespace {

using dnnl::memory;
using flags = dnnl::normalization_flags;

flags ln_flags(bool affine) { return affine ? flags::use_scale | flags::use_shift : flags::none; }

memory::desc stat_desc(const Tensor& in) {
  return memory::desc({in.sizes()[0]}, memory::data_type::f32, memory::format_tag::a);
}

dnnl::layer_normalization_forward::primitive_desc forward_pd(const Tensor& in, bool affine, double eps) {
  dnnl::layer_normalization_forward::desc d(dnnl::prop_kind::forward_training, desc_of(in), stat_desc(in),
                                            static_cast<float>(eps), ln_flags(affine));
  return dnnl::layer_normalization_forward::primitive_desc(d, attr(), engine());
}

std::string key(const char* op, const Tensor& in, bool affine, double eps) {
  KeyBuilder k(op);
  k.add(in).add(static_cast<int64_t>(affine)).add(static_cast<int64_t>(eps * 1e12));
  return k.str();
}

}  // namespace

void layer_norm_forward(const LayerNormForward& p) {
  const Tensor &out = p.out, &in = p.in, &weight = p.weight, &bias = p.bias, &mean = p.mean, &var = p.var;
  const double eps = p.eps;
  auto& cache = dnnl_ops::cache<dnnl::layer_normalization_forward>();
  const bool affine = weight.defined();
  const auto& prim = cache.get(key("ln_fwd", in, affine, eps), [&] {
    return dnnl::layer_normalization_forward(forward_pd(in, affine, eps));
  });
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, memory_of(in)}, {DNNL_ARG_DST, memory_of(out)},
                                          {DNNL_ARG_MEAN, memory_of(stat_desc(in), mean)},
                                          {DNNL_ARG_VARIANCE, memory_of(stat_desc(in), var)}};
  if (affine) {
    args.emplace(DNNL_ARG_SCALE, memory_of(weight));
    args.emplace(DNNL_ARG_SHIFT, memory_of(bias));
  }
  execute(prim, std::move(args));
}

void layer_norm_backward(const LayerNormBackward& p) {
  const Tensor &grad_in = p.grad_in, &grad_out = p.grad_out, &in = p.in, &weight = p.weight, &mean = p.mean, &var = p.var;
  const double eps = p.eps;
  auto& cache = dnnl_ops::cache<dnnl::layer_normalization_backward>();
  const bool affine = weight.defined();
  KeyBuilder k("ln_bwd");
  k.add(in).add(grad_out).add(static_cast<int64_t>(affine)).add(static_cast<int64_t>(eps * 1e12));
  const auto& prim = cache.get(k.str(), [&] {
    auto hint = forward_pd(in, affine, eps);
    dnnl::layer_normalization_backward::desc d(affine ? dnnl::prop_kind::backward : dnnl::prop_kind::backward_data,
                                               desc_of(grad_out), desc_of(in), stat_desc(in),
                                               static_cast<float>(eps), ln_flags(affine));
    return dnnl::layer_normalization_backward(dnnl::layer_normalization_backward::primitive_desc(d, attr(), engine(), hint));
  });
  Tensor gw = p.grad_weight.defined() || !affine ? p.grad_weight : scratch_like(weight);
  Tensor gb = p.grad_bias.defined() || !affine ? p.grad_bias : scratch_like(weight);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory_of(in)}, {DNNL_ARG_DIFF_DST, memory_of(grad_out)}, {DNNL_ARG_DIFF_SRC, memory_of(grad_in)},
      {DNNL_ARG_MEAN, memory_of(stat_desc(in), mean)}, {DNNL_ARG_VARIANCE, memory_of(stat_desc(in), var)}};
  if (affine) {
    args.emplace(DNNL_ARG_SCALE, memory_of(weight));
    args.emplace(DNNL_ARG_SHIFT, memory_of(gb));  // read by some implementations, not by the math
    args.emplace(DNNL_ARG_DIFF_SCALE, memory_of(gw));
    args.emplace(DNNL_ARG_DIFF_SHIFT, memory_of(gb));
  }
  execute(prim, std::move(args));
}

}  // namespace strider::kernels::dnnl_ops
