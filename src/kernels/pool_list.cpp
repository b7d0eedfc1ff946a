// The pooling implementation lists: oneDNN for the windows it computes as PyTorch does, bfloat16
// in float32 where oneDNN has no bfloat16 kernels for the CPU (kernels/float32_detour.h), then the
// reference.
#include <cstdint>

#include "kernels/copy.h"
#include "kernels/dnnl/context.h"
#include "kernels/float32_detour.h"
#include "kernels/pool.h"
#include "kernels/scratch.h"

namespace strider::kernels {
namespace {

// Why oneDNN's pooling would not compute what PyTorch defines for these windows.
std::string window_rejects(const PoolParams& p) {
  if (p.divisor_override) return "oneDNN has no divisor_override";
  if (!p.is_max && p.ceil_mode && p.count_include_pad)
    return "PyTorch does not count a ceil-mode window's overhang as padding; oneDNN would";
  if (!p.is_max)
    for (int64_t d : p.dilation)
      if (d != 1) return "oneDNN's average pooling has no dilation";
  return "";
}

// True when some window of dim i (size `in`) holds no input element: it starts in the padding
// and, with dilation, steps over the whole input. PyTorch gives -inf there; oneDNN, float's lowest.
bool window_all_padding(int64_t in, int64_t out, const PoolParams& p, size_t i) {
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * p.stride[i] - p.padding[i];
    if (start >= 0) return false;  // later windows start inside the input
    bool hits = false;
    for (int64_t j = 0; j < p.kernel[i] && !hits; ++j) hits = start + j * p.dilation[i] >= 0 && start + j * p.dilation[i] < in;
    if (!hits) return true;
  }
  return false;
}

// oneDNN's max pooling starts from float's lowest and skips NaN: a NaN or -inf input would come
// out as another number (PyTorch propagates NaN and keeps -inf). One scan of the dense input's
// bits decides whether the reference must run instead; it ORs without branching so it vectorizes
// (ResNet-50's stem pooling input, 25 MB in bfloat16: 0.7 ms on two cores, 5 ms short-circuiting).
bool holds_nan_or_negative_infinity(const Tensor& t) {
  const int64_t n = t.numel();
  unsigned found = 0;
  if (t.dtype() == kFloat) {
    const auto* u = static_cast<const uint32_t*>(t.data());
#pragma omp parallel for reduction(| : found)
    for (int64_t i = 0; i < n; ++i)
      found |= unsigned((u[i] & 0x7fffffffu) > 0x7f800000u) | unsigned(u[i] == 0xff800000u);
  } else if (t.dtype() == kBFloat16 || t.dtype() == kHalf) {
    const uint16_t inf = t.dtype() == kBFloat16 ? 0x7f80 : 0x7c00;
    const uint16_t negative_inf = inf | 0x8000;
    const auto* u = static_cast<const uint16_t*>(t.data());
#pragma omp parallel for reduction(| : found)
    for (int64_t i = 0; i < n; ++i) found |= unsigned((u[i] & 0x7fff) > inf) | unsigned(u[i] == negative_inf);
  }
  return found != 0;
}

std::string max_values_reject(const PoolForward& f) {
  if (!f.p.is_max) return "";
  for (size_t i = 0; i < f.p.kernel.size(); ++i) {
    const int64_t spatial = f.in.dim() - static_cast<int64_t>(f.p.kernel.size()) + static_cast<int64_t>(i);
    if (window_all_padding(f.in.sizes()[spatial], f.out.sizes()[spatial], f.p, i))
      return "a window lies wholly in the padding (PyTorch gives -inf there, oneDNN float's lowest)";
  }
  if (holds_nan_or_negative_infinity(f.in)) return "the input holds NaN or -inf, which oneDNN's max pooling drops";
  return "";
}

std::string onednn_rejects_window(const Tensor& data, const PoolParams& p) {
  if (std::string why = dnnl_ops::rejects_dtype(data.dtype()); !why.empty()) return why;
  return window_rejects(p);
}

std::string float32_rejects_window(const Tensor& data, const PoolParams& p) {
  if (std::string why = float32_detour_rejects({&data}); !why.empty()) return why;
  return window_rejects(p);
}

// oneDNN's max-pooling workspace holds window positions in the output's layout, the same for a
// float32 and a bfloat16 primitive, so either backward reads either forward's workspace.
void forward_in_float32(const PoolForward& f) {
  PoolForward q = f;
  q.in = float32_copy(f.in);
  q.out = float32_empty(f.out);
  dnnl_ops::pool_forward(q);
  round_into(f.out, q.out);
}

void backward_in_float32(const PoolBackward& b) {
  PoolBackward q = b;
  q.grad_out = float32_copy(b.grad_out);
  q.grad_in = float32_empty(b.grad_in);
  dnnl_ops::pool_backward(q);
  round_into(b.grad_in, q.grad_in);
}

std::string without_indices(const PoolForward& f) {
  if (f.with_indices) return "return_indices asks for PyTorch's indices; oneDNN keeps a workspace";
  return max_values_reject(f);
}

std::string with_workspace(const PoolBackward& b) {
  return b.p.is_max && !b.saved.workspace.defined()
             ? "the forward ran in another implementation and left no oneDNN workspace"
             : "";
}

}  // namespace

const ImplementationList<PoolForward>& pool_forward_implementations() {
  static const ImplementationList<PoolForward> list = {
      {"onednn",
       [](const PoolForward& f) {
         if (std::string why = without_indices(f); !why.empty()) return why;
         return onednn_rejects_window(f.in, f.p);
       },
       dnnl_ops::pool_forward},
      {"onednn_f32",
       [](const PoolForward& f) {
         if (std::string why = without_indices(f); !why.empty()) return why;
         return float32_rejects_window(f.in, f.p);
       },
       forward_in_float32},
      {"ref", [](const PoolForward&) { return std::string(); },
       [](const PoolForward& f) {
         if (f.p.is_max) f.saved->indices = scratch_like(f.out, kLong);
         ref::pool_forward(f.out, f.saved->indices, f.in, f.p);
       }},
  };
  return list;
}

const ImplementationList<PoolBackward>& pool_backward_implementations() {
  static const ImplementationList<PoolBackward> list = {
      {"onednn",
       [](const PoolBackward& b) {
         if (std::string why = with_workspace(b); !why.empty()) return why;
         return onednn_rejects_window(b.grad_out, b.p);
       },
       dnnl_ops::pool_backward},
      {"onednn_f32",
       [](const PoolBackward& b) {
         if (std::string why = with_workspace(b); !why.empty()) return why;
         return float32_rejects_window(b.grad_out, b.p);
       },
       backward_in_float32},
      {"ref",
       [](const PoolBackward& b) {
         if (b.p.is_max && !b.saved.indices.defined())
           return std::string("max pooling's backward needs the forward's indices, and the forward ran in oneDNN "
                              "(run the forward with the reference kernels too)");
         return std::string();
       },
       [](const PoolBackward& b) {
         cpu::fill(b.grad_in, 0);
         ref::pool_backward(b.grad_in, b.grad_out, b.saved.indices, b.p);
       }},
  };
  return list;
}

const ImplementationList<AdaptivePoolForward>& adaptive_pool_forward_implementations() {
  static const ImplementationList<AdaptivePoolForward> list = {
      {"ref", [](const AdaptivePoolForward&) { return std::string(); },
       [](const AdaptivePoolForward& f) { ref::adaptive_pool_forward(f.out, f.indices, f.in, f.is_max); }},
  };
  return list;
}

const ImplementationList<AdaptivePoolBackward>& adaptive_pool_backward_implementations() {
  static const ImplementationList<AdaptivePoolBackward> list = {
      {"ref", [](const AdaptivePoolBackward&) { return std::string(); },
       [](const AdaptivePoolBackward& b) {
         cpu::fill(b.grad_in, 0);
         ref::adaptive_pool_backward(b.grad_in, b.grad_out, b.indices, b.is_max);
       }},
  };
  return list;
}

void pool_forward(const PoolForward& problem, const Dispatch& d) {
  run_first(problem.p.is_max ? "max_pool" : "avg_pool", pool_forward_implementations(), problem, d);
}
void pool_backward(const PoolBackward& problem, const Dispatch& d) {
  run_first("pool_backward", pool_backward_implementations(), problem, d);
}
void adaptive_pool_forward(const AdaptivePoolForward& problem, const Dispatch& d) {
  run_first("adaptive_pool", adaptive_pool_forward_implementations(), problem, d);
}
void adaptive_pool_backward(const AdaptivePoolBackward& problem, const Dispatch& d) {
  run_first("adaptive_pool_backward", adaptive_pool_backward_implementations(), problem, d);
}

}  // namespace strider::kernels
