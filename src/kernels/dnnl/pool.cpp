// Pooling primitives (pooling_v2: with dilation). Source and destination share one layout.
#include "kernels/dnnl/context.h"
#include "kernels/pool.h"

namespace strider::kernels::dnnl_ops {
namespace {

using dnnl::memory;

struct Geometry {
  memory::dims strides, kernel, dilation, pad_l, pad_r;
};

Geometry geometry(const Tensor& in, const Tensor& out, const PoolParams& p) {
  Geometry g;
  for (int64_t i = 0; i + 2 < in.dim(); ++i) {
    const int64_t k = p.kernel[i], s = p.stride[i], d = p.dilation[i], pl = p.padding[i];
    g.kernel.push_back(k);
    g.strides.push_back(s);
    g.dilation.push_back(d - 1);
    g.pad_l.push_back(pl);
    g.pad_r.push_back((out.sizes()[2 + i] - 1) * s + (k - 1) * d + 1 - in.sizes()[2 + i] - pl);
  }
  return g;
}

dnnl::algorithm algorithm(const PoolParams& p) {
  if (p.is_max) return dnnl::algorithm::pooling_max;
  return p.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                             : dnnl::algorithm::pooling_avg_exclude_padding;
}

dnnl::pooling_v2_forward::primitive_desc forward_pd(const Tensor& in, const Tensor& out, const PoolParams& p) {
  Geometry g = geometry(in, out, p);
  dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_training, algorithm(p), desc_of(in), desc_of(out),
                                   g.strides, g.kernel, g.dilation, g.pad_l, g.pad_r);
  return dnnl::pooling_v2_forward::primitive_desc(d, attr(), engine());
}

std::string key(const char* op, const Tensor& a, const Tensor& b, const PoolParams& p) {
  KeyBuilder k(op);
  k.add(a).add(b).add(p.kernel).add(p.stride).add(p.padding).add(p.dilation)
   .add(static_cast<int64_t>(p.is_max)).add(static_cast<int64_t>(p.count_include_pad));
  return k.str();
}

struct FwdEntry {
  dnnl::pooling_v2_forward::primitive_desc pd;
  dnnl::pooling_v2_forward prim;
};

FwdEntry forward_entry(const Tensor& in, const Tensor& out, const PoolParams& p) {
  auto& cache = dnnl_ops::cache<FwdEntry>();
  return cache.get(key("pool_fwd", in, out, p), [&] {
    auto pd = forward_pd(in, out, p);
    return FwdEntry{pd, dnnl::pooling_v2_forward(pd)};
  });
}

}  // namespace

void pool_forward(const PoolForward& f) {
  const Tensor &in = f.in, &out = f.out;
  const PoolParams& p = f.p;
  const FwdEntry& e = forward_entry(in, out, p);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, memory_of(in)}, {DNNL_ARG_DST, memory_of(out)}};
  if (p.is_max) {
    // Training-mode max pooling writes a workspace, which the backward reads.
    f.saved->workspace = scratch_bytes(static_cast<int64_t>(e.pd.workspace_desc().get_size()));
    args.emplace(DNNL_ARG_WORKSPACE, memory(e.pd.workspace_desc(), engine(), f.saved->workspace.data()));
  }
  execute(e.prim, std::move(args));
}

void pool_backward(const PoolBackward& b) {
  const Tensor &grad_in = b.grad_in, &grad_out = b.grad_out, &workspace = b.saved.workspace;
  const PoolParams& p = b.p;
  auto& cache = dnnl_ops::cache<dnnl::pooling_v2_backward>();
  const FwdEntry& fwd = forward_entry(grad_in, grad_out, p);
  const auto& prim = cache.get(key("pool_bwd", grad_in, grad_out, p), [&] {
    Geometry g = geometry(grad_in, grad_out, p);
    dnnl::pooling_v2_backward::desc d(algorithm(p), desc_of(grad_in), desc_of(grad_out), g.strides, g.kernel,
                                      g.dilation, g.pad_l, g.pad_r);
    dnnl::pooling_v2_backward::primitive_desc pd(d, attr(), engine(), fwd.pd);
    return dnnl::pooling_v2_backward(pd);
  });
  std::unordered_map<int, memory> args = {{DNNL_ARG_DIFF_SRC, memory_of(grad_in)}, {DNNL_ARG_DIFF_DST, memory_of(grad_out)}};
  if (p.is_max) {
    const auto want = static_cast<int64_t>(fwd.pd.workspace_desc().get_size());
    if (workspace.nbytes() < want)
      throw ImplementationDeclined(strider::detail::str("the forward's workspace holds ", workspace.nbytes(),
                                                        " bytes; this primitive reads ", want));
    args.emplace(DNNL_ARG_WORKSPACE, memory(fwd.pd.workspace_desc(), engine(), workspace.data()));
  }
  execute(prim, std::move(args));
}

}  // namespace strider::kernels::dnnl_ops
