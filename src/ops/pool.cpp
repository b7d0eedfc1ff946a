// Pooling: argument checks, output sizes (with PyTorch's ceil rule) and layouts; the kernels'
// implementation lists (kernels/pool.h) compute.
#include "strider/ops/pool.h"

#include "core/make_tensor.h"
#include "kernels/pool.h"
#include "ops/dense_in_format.h"
#include "ops/kernel_dispatch.h"
#include "strider/core/layout.h"
#include "strider/ops/check_mode.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"
#include "strider/ops/reduce.h"
#include "strider/ops/view.h"

namespace strider::ops {
namespace {

const char* pool_name(bool is_max, int64_t nsp) {
  if (is_max) return nsp == 3 ? "max_pool3d" : "max_pool2d";
  return nsp == 3 ? "avg_pool3d" : "avg_pool2d";
}

DimVector expand(const DimVector& v, int64_t nsp, const char* what, const char* op) {
  if (static_cast<int64_t>(v.size()) == nsp) return v;
  STRIDER_CHECK(v.size() == 1, op, what, " must have 1 or ", nsp, " values, got ", IntArrayRef(v));
  return DimVector(nsp, v[0]);
}

struct Prepared {
  Tensor input;  // batched
  bool unbatched;
  kernels::PoolParams params;
  DimVector out_shape;
};

Prepared prepare(const Tensor& input, int64_t nsp, const PoolArgs& a, bool is_max) {
  const char* op = pool_name(is_max, nsp);
  STRIDER_CHECK(input.dim() == nsp + 1 || input.dim() == nsp + 2, op, "non-empty ", nsp + 1, "D or ", nsp + 2,
                "D (batch mode) tensor expected for input, got shape ", input.sizes());
  Prepared p;
  p.unbatched = input.dim() == nsp + 1;
  p.input = p.unbatched ? unsqueeze(input, 0) : input;
  for (int64_t i = 1; i < p.input.dim(); ++i)
    STRIDER_CHECK(p.input.sizes()[i] > 0, op, "expected input with non-zero size for non-batch dimensions, got ", input.sizes());
  STRIDER_CHECK(is_floating_point(input.dtype()), op, "expected a floating-point input, got ", input.dtype());
  p.params.kernel = expand(a.kernel, nsp, "kernel_size", op);
  p.params.stride = a.stride.empty() ? p.params.kernel : expand(a.stride, nsp, "stride", op);
  p.params.padding = expand(a.padding, nsp, "padding", op);
  p.params.dilation = expand(a.dilation, nsp, "dilation", op);
  p.params.is_max = is_max;
  p.params.count_include_pad = a.count_include_pad;
  p.params.divisor_override = a.divisor_override.value_or(0);
  p.params.ceil_mode = a.ceil_mode;
  p.out_shape = {p.input.sizes()[0], p.input.sizes()[1]};
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t I = p.input.sizes()[2 + i], k = p.params.kernel[i], s = p.params.stride[i];
    const int64_t pad = p.params.padding[i], d = p.params.dilation[i];
    STRIDER_CHECK(k > 0 && s > 0 && d > 0, op, "kernel size, stride and dilation must be positive (kernel ",
                  IntArrayRef(p.params.kernel), ", stride ", IntArrayRef(p.params.stride), ")");
    STRIDER_CHECK(pad <= k / 2, op, "pad should be at most half of effective kernel size, but got pad=", pad,
                  ", kernel_size=", k);
    // PyTorch's pooling_output_shape: division rounding toward negative infinity, so a window
    // larger than the padded input gives size 0 (an error below), not 1.
    const int64_t span = I + 2 * pad - d * (k - 1) - 1 + (a.ceil_mode ? s - 1 : 0);
    int64_t o = (span >= 0 ? span / s : -((-span + s - 1) / s)) + 1;
    // The last window must start inside the input or its left padding.
    if (a.ceil_mode && (o - 1) * s >= I + pad) --o;
    STRIDER_CHECK(o > 0, op, "Given input size ", input.sizes(), ", kernel ", IntArrayRef(p.params.kernel), ", stride ",
                  IntArrayRef(p.params.stride), ", padding ", IntArrayRef(p.params.padding),
                  ": calculated output size ", o, " is too small (PyTorch: 'Output size is too small')");
    p.out_shape.push_back(o);
  }
  return p;
}

MemoryFormat output_format(const Prepared& p, int64_t nsp) {
  if (p.unbatched || nsp == 3) return MemoryFormat::Contiguous;
  return p.input.suggest_memory_format();
}

PoolResult pool_forward(const Tensor& input, int64_t nsp, const PoolArgs& a, bool is_max, bool with_indices) {
  const char* op = pool_name(is_max, nsp);
  Prepared p = prepare(input, nsp, a, is_max);
  PoolResult r;
  // Compute in the input's own format; 3-d pooling then returns contiguous, as PyTorch does.
  r.compute_format = p.input.suggest_memory_format();
  Tensor in_c = dense_in_format(p.input, r.compute_format);
  Tensor out_c = make_tensor(p.out_shape, layout::strides_for_format(p.out_shape, r.compute_format, op), input.dtype());
  kernels::PoolSaved saved;
  kernels::pool_forward({.out = out_c, .in = in_c, .p = p.params, .with_indices = with_indices, .saved = &saved},
                        dispatch(op));
  r.indices = saved.indices;
  r.workspace = saved.workspace;
  // Fresh in the output's format, as PyTorch allocates it: contiguous() would hand back a C == 1
  // channels-last-3d result unchanged (it is contiguous too), keeping its channels-last strides.
  const MemoryFormat fmt = output_format(p, nsp);
  Tensor out = fmt == r.compute_format ? out_c : dense_in_format(out_c, fmt);
  if (r.indices.defined() && fmt != r.compute_format) r.indices = dense_in_format(r.indices, fmt);
  check_memory_format_kept(op, {&p.input}, out);
  r.out = p.unbatched ? squeeze(out, 0) : out;
  if (r.indices.defined() && p.unbatched) r.indices = squeeze(r.indices, 0);
  return r;
}

}  // namespace

PoolResult max_pool(const Tensor& input, int64_t nsp, const PoolArgs& args, bool with_indices) {
  return pool_forward(input, nsp, args, true, with_indices);
}

PoolResult avg_pool(const Tensor& input, int64_t nsp, const PoolArgs& args) {
  return pool_forward(input, nsp, args, false, false);
}

Tensor pool_backward(const Tensor& grad_out, const Tensor& input, int64_t nsp, const PoolArgs& args,
                     const PoolResult& fwd, bool is_max) {
  Prepared p = prepare(input, nsp, args, is_max);
  const MemoryFormat fmt = fwd.compute_format;
  Tensor go = p.unbatched ? unsqueeze(grad_out, 0) : grad_out;
  go = dense_in_format(go.dtype() == input.dtype() ? go : to(go, input.dtype()), fmt);
  Tensor gi = make_tensor(p.input.sizes().vec(), layout::strides_for_format(p.input.sizes(), fmt, "pool_backward"), input.dtype());
  Tensor idx = fwd.indices;
  if (idx.defined()) {
    if (p.unbatched) idx = unsqueeze(idx, 0);
    // The reference reads indices through the gradient's strides: give them the same layout.
    idx = as_strided(contiguous(idx, fmt), go.sizes(), go.strides());
  }
  kernels::pool_backward({.grad_in = gi, .grad_out = go, .p = p.params, .saved = {idx, fwd.workspace}},
                         dispatch("pool_backward"));
  // PyTorch's gradient takes the forward output's format (3-d pooling: contiguous, C == 1 too).
  const MemoryFormat out_fmt = output_format(p, nsp);
  if (out_fmt != fmt) gi = dense_in_format(gi, out_fmt);
  return p.unbatched ? squeeze(gi, 0) : gi;
}

PoolResult adaptive_pool(const Tensor& input, IntArrayRef output_size, bool is_max) {
  const int64_t nsp = static_cast<int64_t>(output_size.size());
  const char* op = is_max ? (nsp == 3 ? "adaptive_max_pool3d" : "adaptive_max_pool2d")
                          : (nsp == 3 ? "adaptive_avg_pool3d" : "adaptive_avg_pool2d");
  STRIDER_CHECK(input.dim() == nsp + 1 || input.dim() == nsp + 2, op, "expected ", nsp + 1, "D or ", nsp + 2,
                "D input, got shape ", input.sizes());
  const bool unbatched = input.dim() == nsp + 1;
  Tensor x = unbatched ? unsqueeze(input, 0) : input;
  for (int64_t i = 1; i < x.dim(); ++i)
    STRIDER_CHECK(x.sizes()[i] > 0 || (!is_max && nsp == 2 && product(output_size) == 1 && i >= 2), op,
                  op, "(): Expected input to have non-zero size for non-batch dimensions, but input has sizes ",
                  input.sizes(), " with dimension ", i + (unbatched ? -1 : 0), " being empty");
  for (int64_t o : output_size) STRIDER_CHECK(o >= 0, op, "output size must be non-negative, got ", output_size);
  PoolResult r;
  if (!is_max && nsp == 2 && output_size[0] == 1 && output_size[1] == 1 && !unbatched) {
    // PyTorch computes this as a mean and restrides a channels-last result to stay CL (SPEC §11).
    Tensor m = mean(x, {-1, -2}, true);
    if (x.suggest_memory_format() == MemoryFormat::ChannelsLast) {
      const int64_t c = m.sizes()[1];
      m = as_strided(m, m.sizes(), {c, 1, c, c});
    }
    r.out = m;
    // Its gradient is the mean's, expand then divide: contiguous, whatever the input's format.
    r.compute_format = MemoryFormat::Contiguous;
    return r;
  }
  DimVector shape = {x.sizes()[0], x.sizes()[1]};
  shape.append(output_size.begin(), output_size.end());
  const MemoryFormat fmt = (unbatched || nsp == 3) ? MemoryFormat::Contiguous : x.suggest_memory_format();
  r.compute_format = fmt;
  Tensor out = make_tensor(shape, layout::strides_for_format(shape, fmt, op), x.dtype());
  if (is_max) r.indices = empty(shape, TensorOptions(kLong).memory_format(fmt));
  Tensor x_c = contiguous(x, fmt);
  kernels::adaptive_pool_forward({.out = out, .indices = r.indices, .in = x_c, .is_max = is_max}, dispatch(op));
  check_memory_format_kept(op, {&x}, out);
  r.out = unbatched ? squeeze(out, 0) : out;
  if (unbatched && r.indices.defined()) r.indices = squeeze(r.indices, 0);
  return r;
}

Tensor adaptive_pool_backward(const Tensor& grad_out, const Tensor& input, IntArrayRef output_size,
                              const PoolResult& fwd, bool is_max) {
  const int64_t nsp = static_cast<int64_t>(output_size.size());
  const bool unbatched = input.dim() == nsp + 1;
  Tensor x = unbatched ? unsqueeze(input, 0) : input;
  Tensor go = unbatched ? unsqueeze(grad_out, 0) : grad_out;
  Tensor idx = fwd.indices.defined() && unbatched ? unsqueeze(fwd.indices, 0) : fwd.indices;
  const MemoryFormat fmt = fwd.compute_format;
  Tensor gi = make_tensor(x.sizes().vec(), layout::strides_for_format(x.sizes(), fmt, "adaptive_pool_backward"), x.dtype());
  if (go.dtype() != x.dtype()) go = to(go, x.dtype());
  go = contiguous(go, fmt);
  // The kernel reads indices through the gradient's strides: give them the same layout.
  if (idx.defined()) idx = as_strided(contiguous(idx, fmt), go.sizes(), go.strides());
  kernels::adaptive_pool_backward({.grad_in = gi, .grad_out = go, .indices = idx, .is_max = is_max},
                                  dispatch("adaptive_pool_backward"));
  return unbatched ? squeeze(gi, 0) : gi;
}

}  // namespace strider::ops
