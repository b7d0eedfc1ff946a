// Convolution through oneDNN. Source and destination are described with their own strides (the
// ops layer made them dense in NCHW or NHWC order); weights are handed over in whatever layout
// they have and reordered into the format the primitive prefers ("describe, and let the library
// choose"). Primitives are cached by everything that shapes them; with autotune on, the cache
// keeps the fastest of oneDNN's implementations (kernels/dnnl/autotune.h).
#include "kernels/conv.h"
#include "kernels/dnnl/autotune.h"
#include "kernels/dnnl/context.h"

namespace strider::kernels::dnnl_ops {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;

struct Geometry {
  memory::dims strides, dilates, pad_l, pad_r;
};

// oneDNN's right padding is whatever makes the output size come out exact.
Geometry geometry(const Tensor& in, const Tensor& weight, const Tensor& out, const ConvParams& p) {
  Geometry g;
  const int64_t nsp = in.dim() - 2;
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t k = weight.sizes()[2 + i], s = p.stride[i], d = p.dilation[i], pl = p.padding[i];
    g.strides.push_back(s);
    g.dilates.push_back(d - 1);
    g.pad_l.push_back(pl);
    if (!p.transposed) {
      g.pad_r.push_back((out.sizes()[2 + i] - 1) * s + (k - 1) * d + 1 - in.sizes()[2 + i] - pl);
    } else {
      // Transposed: the roles of in and out swap.
      g.pad_r.push_back((in.sizes()[2 + i] - 1) * s + (k - 1) * d + 1 - out.sizes()[2 + i] - pl);
    }
  }
  return g;
}

// The weight as oneDNN sees it: [G,] O, I, k... with strides taken from the strider tensor.
// Transposed weights are [Cin, Cout/g, k...] in strider and O-first for oneDNN.
memory::desc weight_user_desc(const Tensor& w, const ConvParams& p) {
  const int64_t g = p.groups;
  DimVector sz, st;
  if (!p.transposed) {
    if (g > 1) {
      sz = {g, w.sizes()[0] / g, w.sizes()[1]};
      st = {w.sizes()[0] / g * w.strides()[0], w.strides()[0], w.strides()[1]};
    } else {
      sz = {w.sizes()[0], w.sizes()[1]};
      st = {w.strides()[0], w.strides()[1]};
    }
  } else {
    const int64_t cin_g = w.sizes()[0] / g;
    if (g > 1) {
      sz = {g, w.sizes()[1], cin_g};
      st = {cin_g * w.strides()[0], w.strides()[1], w.strides()[0]};
    } else {
      sz = {w.sizes()[1], w.sizes()[0]};
      st = {w.strides()[1], w.strides()[0]};
    }
  }
  for (int64_t d = 2; d < w.dim(); ++d) {
    sz.push_back(w.sizes()[d]);
    st.push_back(w.strides()[d]);
  }
  return desc_of(sz, st, w.dtype());
}

memory::desc any_like(const memory::desc& d) {
  return memory::desc(d.dims(), d.data_type(), tag::any);
}

std::string key(const char* op, const Tensor& a, const Tensor& b, const Tensor& c, bool bias,
                const ConvParams& p) {
  KeyBuilder k(op);
  k.add(a).add(b).add(c).add(p.stride).add(p.padding).add(p.dilation).add(p.groups)
   .add(static_cast<int64_t>(p.transposed)).add(static_cast<int64_t>(bias));
  return k.str();
}

const dnnl::algorithm kAlgo = dnnl::algorithm::convolution_direct;
const dnnl::algorithm kDeconvAlgo = dnnl::algorithm::deconvolution_direct;

// ---- forward
struct FwdEntry {
  dnnl::primitive_desc pd;
  dnnl::primitive prim;
  memory::desc weights;
};

FwdEntry make_forward(const Tensor& out, const Tensor& in, const Tensor& weight, const Tensor& bias,
                      const ConvParams& p) {
  const bool has_bias = bias.defined();
  const dnnl::prop_kind prop = dnnl::prop_kind::forward_training;
  Geometry g = geometry(in, weight, out, p);
  memory::desc src = desc_of(in), dst = desc_of(out), user_w = weight_user_desc(weight, p), w = any_like(user_w);
  memory::desc b = has_bias ? memory::desc({out.sizes()[1]}, data_type(out.dtype()), tag::x) : memory::desc();
  auto each = [&](const Visit& visit) {
    if (!p.transposed) {
      auto d = has_bias ? dnnl::convolution_forward::desc(prop, kAlgo, src, w, b, dst, g.strides, g.dilates, g.pad_l, g.pad_r)
                        : dnnl::convolution_forward::desc(prop, kAlgo, src, w, dst, g.strides, g.dilates, g.pad_l, g.pad_r);
      return walk(dnnl::convolution_forward::primitive_desc(d, attr(), engine()), visit);
    }
    auto d = has_bias ? dnnl::deconvolution_forward::desc(prop, kDeconvAlgo, src, w, b, dst, g.strides, g.dilates, g.pad_l, g.pad_r)
                      : dnnl::deconvolution_forward::desc(prop, kDeconvAlgo, src, w, dst, g.strides, g.dilates, g.pad_l, g.pad_r);
    return walk(dnnl::deconvolution_forward::primitive_desc(d, attr(), engine()), visit);
  };
  auto bind = [&](const dnnl::primitive_desc& pd, std::vector<Tensor>& keep) {
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, memory_of(in)},
                                            {DNNL_ARG_WEIGHTS, reordered_copy(memory_of(user_w, weight), pd.weights_desc(0), keep)},
                                            {DNNL_ARG_DST, memory_of(out)}};
    if (has_bias) args.emplace(DNNL_ARG_BIAS, memory_of(bias));
    return args;
  };
  dnnl::primitive_desc pd = choose_implementation("conv_fwd", each, bind);
  return {pd, dnnl::primitive(pd), pd.weights_desc(0)};
}

PrimitiveCache<FwdEntry>& fwd_cache() {
  return cache<FwdEntry>();
}

}  // namespace

void conv_forward(const Tensor& out, const Tensor& in, const Tensor& weight, const Tensor& bias,
                  const ConvParams& p) {
  const bool has_bias = bias.defined();
  const FwdEntry& e = fwd_cache().get(key("conv_fwd", out, in, weight, has_bias, p),
                                      [&] { return make_forward(out, in, weight, bias, p); });
  Tensor held;
  memory w = weights_in(weight, weight_user_desc(weight, p), e.weights, held);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory_of(in)}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, memory_of(out)}};
  if (has_bias) args.emplace(DNNL_ARG_BIAS, memory_of(bias));
  execute(e.prim, std::move(args));
}

namespace {

struct BwdEntry {
  dnnl::primitive prim;
  memory::desc weights;  // the weights (backward data) or diff weights (backward weights) format
};

PrimitiveCache<BwdEntry>& bwd_cache() {
  return cache<BwdEntry>();
}

}  // namespace

void conv_backward_input(const Tensor& grad_in, const Tensor& grad_out, const Tensor& weight,
                         const ConvParams& p) {
  const BwdEntry& e = bwd_cache().get(key("conv_bwd_data", grad_in, grad_out, weight, false, p), [&] {
    Geometry g = geometry(grad_in, weight, grad_out, p);
    memory::desc diff_src = desc_of(grad_in), diff_dst = desc_of(grad_out), user_w = weight_user_desc(weight, p),
                 w = any_like(user_w);
    auto each = [&](const Visit& visit) {
      if (!p.transposed) {
        dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, kAlgo, diff_src, w, diff_dst,
                                           g.strides, g.dilates, g.pad_l, g.pad_r);
        dnnl::convolution_forward::primitive_desc hint(fd, attr(), engine());
        dnnl::convolution_backward_data::desc bd(kAlgo, diff_src, w, diff_dst, g.strides, g.dilates, g.pad_l, g.pad_r);
        return walk(dnnl::convolution_backward_data::primitive_desc(bd, attr(), engine(), hint), visit);
      }
      dnnl::deconvolution_forward::desc fd(dnnl::prop_kind::forward_training, kDeconvAlgo, diff_src, w, diff_dst,
                                           g.strides, g.dilates, g.pad_l, g.pad_r);
      dnnl::deconvolution_forward::primitive_desc hint(fd, attr(), engine());
      dnnl::deconvolution_backward_data::desc bd(kDeconvAlgo, diff_src, w, diff_dst, g.strides, g.dilates, g.pad_l, g.pad_r);
      return walk(dnnl::deconvolution_backward_data::primitive_desc(bd, attr(), engine(), hint), visit);
    };
    auto bind = [&](const dnnl::primitive_desc& pd, std::vector<Tensor>& keep) {
      return std::unordered_map<int, memory>{
          {DNNL_ARG_DIFF_SRC, memory_of(grad_in)},
          {DNNL_ARG_WEIGHTS, reordered_copy(memory_of(user_w, weight), pd.weights_desc(0), keep)},
          {DNNL_ARG_DIFF_DST, memory_of(grad_out)}};
    };
    dnnl::primitive_desc pd = choose_implementation("conv_bwd_data", each, bind);
    return BwdEntry{dnnl::primitive(pd), pd.weights_desc(0)};
  });
  Tensor held;
  memory w = weights_in(weight, weight_user_desc(weight, p), e.weights, held);
  execute(e.prim, {{DNNL_ARG_DIFF_SRC, memory_of(grad_in)}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_DST, memory_of(grad_out)}});
}

void conv_backward_weight(const Tensor& grad_weight, const Tensor& grad_bias, const Tensor& in,
                          const Tensor& grad_out, const ConvParams& p) {
  const bool has_bias = grad_bias.defined();
  const BwdEntry& e = bwd_cache().get(key("conv_bwd_weights", in, grad_out, grad_weight, has_bias, p), [&] {
    Geometry g = geometry(in, grad_weight, grad_out, p);
    memory::desc src = desc_of(in), diff_dst = desc_of(grad_out), dw = any_like(weight_user_desc(grad_weight, p));
    memory::desc db = has_bias ? memory::desc({grad_bias.sizes()[0]}, data_type(grad_bias.dtype()), tag::x) : memory::desc();
    auto each = [&](const Visit& visit) {
      if (!p.transposed) {
        dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, kAlgo, src, dw, diff_dst,
                                           g.strides, g.dilates, g.pad_l, g.pad_r);
        dnnl::convolution_forward::primitive_desc hint(fd, attr(), engine());
        auto bd = has_bias ? dnnl::convolution_backward_weights::desc(kAlgo, src, dw, db, diff_dst, g.strides, g.dilates, g.pad_l, g.pad_r)
                           : dnnl::convolution_backward_weights::desc(kAlgo, src, dw, diff_dst, g.strides, g.dilates, g.pad_l, g.pad_r);
        return walk(dnnl::convolution_backward_weights::primitive_desc(bd, attr(), engine(), hint), visit);
      }
      dnnl::deconvolution_forward::desc fd(dnnl::prop_kind::forward_training, kDeconvAlgo, src, dw, diff_dst,
                                           g.strides, g.dilates, g.pad_l, g.pad_r);
      dnnl::deconvolution_forward::primitive_desc hint(fd, attr(), engine());
      auto bd = has_bias ? dnnl::deconvolution_backward_weights::desc(kDeconvAlgo, src, dw, db, diff_dst, g.strides, g.dilates, g.pad_l, g.pad_r)
                         : dnnl::deconvolution_backward_weights::desc(kDeconvAlgo, src, dw, diff_dst, g.strides, g.dilates, g.pad_l, g.pad_r);
      return walk(dnnl::deconvolution_backward_weights::primitive_desc(bd, attr(), engine(), hint), visit);
    };
    auto bind = [&](const dnnl::primitive_desc& pd, std::vector<Tensor>& keep) {
      keep.emplace_back();
      std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, memory_of(in)},
                                              {DNNL_ARG_DIFF_DST, memory_of(grad_out)},
                                              {DNNL_ARG_DIFF_WEIGHTS, allocate(pd.diff_weights_desc(0), keep.back())}};
      if (has_bias) args.emplace(DNNL_ARG_DIFF_BIAS, memory_of(grad_bias));
      return args;
    };
    dnnl::primitive_desc pd = choose_implementation("conv_bwd_weights", each, bind);
    return BwdEntry{dnnl::primitive(pd), pd.diff_weights_desc(0)};
  });
  memory user_dw = memory_of(weight_user_desc(grad_weight, p), grad_weight);
  Tensor blocked;  // the gradient in the primitive's layout, when that is not the user's
  memory dw = e.weights == user_dw.get_desc() ? user_dw : allocate(e.weights, blocked);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory_of(in)}, {DNNL_ARG_DIFF_DST, memory_of(grad_out)}, {DNNL_ARG_DIFF_WEIGHTS, dw}};
  if (has_bias) args.emplace(DNNL_ARG_DIFF_BIAS, memory_of(grad_bias));
  execute(e.prim, std::move(args));
  if (dw.get_data_handle() != user_dw.get_data_handle()) reorder_into(dw, user_dw);
}

}  // namespace strider::kernels::dnnl_ops
