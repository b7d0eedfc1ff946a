#include "kernels/dnnl/context.h"
#include "kernels/matmul.h"

namespace strider::kernels::dnnl_ops {

void matmul(const Matmul& p) {
  const Tensor &out = p.out, &a = p.a, &w = p.w, &bias = p.bias;
  auto& cache = dnnl_ops::cache<dnnl::matmul>();
  KeyBuilder k("matmul");
  k.add(out).add(a).add(w).add(bias);
  DimVector bias_sizes, bias_strides;
  if (bias.defined()) {
    bias_sizes = DimVector(out.dim(), 1);
    bias_sizes.back() = bias.sizes()[0];
    bias_strides = DimVector(out.dim(), 0);
    bias_strides.back() = bias.strides()[0];
  }
  const auto& prim = cache.get(k.str(), [&] {
    dnnl::memory::desc bd = bias.defined() ? desc_of(bias_sizes, bias_strides, bias.dtype()) : dnnl::memory::desc();
    dnnl::matmul::desc d = bias.defined() ? dnnl::matmul::desc(desc_of(a), desc_of(w), bd, desc_of(out))
                                          : dnnl::matmul::desc(desc_of(a), desc_of(w), desc_of(out));
    return dnnl::matmul(dnnl::matmul::primitive_desc(d, attr(), engine()));
  });
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, memory_of(a)}, {DNNL_ARG_WEIGHTS, memory_of(w)}, {DNNL_ARG_DST, memory_of(out)}};
  if (bias.defined()) args.emplace(DNNL_ARG_BIAS, memory_of(desc_of(bias_sizes, bias_strides, bias.dtype()), bias));
  execute(prim, std::move(args));
}

}  // namespace strider::kernels::dnnl_ops
