// The normalization implementation lists: for batch norm, strider's own kernels in evaluation
// mode (any dense layout) and in training mode (plain-layout and channels-last batches, where
// oneDNN 2.6 is slower), and for plain-layout bfloat16 oneDNN via channels-last
// (kernels/channels_last_detour.h); oneDNN where it computes the problem; bfloat16 in float32
// where oneDNN has no bfloat16 kernels for the CPU (kernels/float32_detour.h); the reference.
// strider's training kernels fuse batch norm's residual add and ReLU; every other entry is
// wrapped to apply them after (forward) and to mask the gradient before (backward), so every
// entry computes every problem.
#include "kernels/channels_last_detour.h"
#include "kernels/copy.h"
#include "kernels/dnnl/context.h"
#include "kernels/float32_detour.h"
#include "kernels/norm.h"
#include "kernels/pointwise.h"
#include "kernels/scratch.h"

namespace strider::kernels {

// The cpu kernel's reasons live here, not in its source: that is compiled once per ISA level.
namespace cpu {
std::string batch_norm_inference_rejects(const BatchNormForward& p) {
  if (p.training) return "it computes evaluation mode only";
  if (p.in.dtype() != kFloat && p.in.dtype() != kBFloat16) return "it computes float32 and bfloat16 only";
  if (p.in.strides() != p.out.strides() || !p.in.is_non_overlapping_and_dense())
    return "input and output are not one dense layout";
  if (!p.in.is_contiguous() && p.in.strides()[1] != 1) return "the layout is neither plain nor channels-last";
  return "";
}

namespace {
// Whether t's memory is rows of its dim-1 channels, dims 0, 2, 3, ... outer to inner (size-1
// dims may have any stride).
bool rows_of_channels(const Tensor& t) {
  int64_t expected = 1;
  auto dim_fits = [&](int64_t d) {
    const bool fits = t.sizes()[d] == 1 || t.strides()[d] == expected;
    expected *= t.sizes()[d];
    return fits;
  };
  if (!dim_fits(1)) return false;
  for (int64_t d = t.dim() - 1; d >= 2; --d)
    if (!dim_fits(d)) return false;
  return dim_fits(0);
}
}  // namespace

std::string batch_norm_training_rejects(BatchLayout layout, const Tensor& in, std::initializer_list<const Tensor*> data,
                                        std::initializer_list<const Tensor*> stats, bool training) {
  if (!training) return "it computes training mode only";
  if (in.dim() < 3 || in.dim() > 5) return strider::detail::str("it normalizes 3-d to 5-d batches, not ", in.dim(), "-d");
  if (in.numel() == 0) return "the batch is empty";
  const bool plain = layout == BatchLayout::plain;
  for (const Tensor* t : data)
    if (t->defined() && t->sizes() != in.sizes()) return "the data tensors' shapes differ";
  for (const Tensor* t : data)
    if (t->defined() && (t->dtype() != in.dtype() || !(plain ? t->is_contiguous() : rows_of_channels(*t))))
      return plain ? "the data tensors are not all in the plain layout in one dtype"
                   : "the data tensors are not all channels-last in one dtype";
  for (const Tensor* t : stats)
    if (t->defined() && t->dtype() != kFloat) return "its statistics and affine parameters must be float32";
  if (in.dtype() != kBFloat16 && in.dtype() != kFloat) return "it computes float32 and bfloat16 only";
  return "";
}
}  // namespace cpu

namespace {

std::string accept_all(const auto&) { return ""; }

// The training kernels' entries, forward and backward (a backward's relu_out_by names its forward).
constexpr const char* kPlainKernel = "cpu_plain";
constexpr const char* kChannelsLastKernel = "cpu_channels_last";

// A training kernel recomputes a fused ReLU's mask from the input, which gives relu_out's mask
// only where that same kernel computed relu_out; the other entries read relu_out.
std::string relu_mask_rejects(const BatchNormBackward& p, const char* self) {
  if (!p.relu_out.defined()) return "";
  if (p.relu_out_by == nullptr || std::string(p.relu_out_by) != self)
    return strider::detail::str("relu_out was computed by ", p.relu_out_by ? p.relu_out_by : "an unnamed implementation",
                                ", so its mask is read, not recomputed");
  if (p.residual.defined() != p.grad_residual.defined())
    return "recomputing the mask needs the residual, and the residual's gradient comes with it";
  return "";
}

using UnaryKernel = void (*)(UnaryOp, const Tensor&, const Tensor&, const PointwiseArgs&);
using BinaryKernel = void (*)(BinaryOp, const Tensor&, const Tensor&, const Tensor&, const PointwiseArgs&);

// An implementation without the fused residual and ReLU, then the add and the ReLU in place.
template <void (*Run)(const BatchNormForward&), UnaryKernel Unary = cpu::unary, BinaryKernel Binary = cpu::binary>
void then_relu(const BatchNormForward& p) {
  BatchNormForward q = p;
  q.relu = false;
  q.residual = Tensor();
  Run(q);
  if (p.residual.defined()) Binary(BinaryOp::Add, p.out, p.out, p.residual, {});
  if (p.relu) Unary(UnaryOp::Relu, p.out, p.out, {});
}

// The ReLU's gradient (grad_out where relu_out > 0; also the residual's), then an implementation
// without it.
template <void (*Run)(const BatchNormBackward&), BinaryKernel Binary = cpu::binary>
void after_relu_backward(const BatchNormBackward& p) {
  if (!p.relu_out.defined()) return Run(p);
  BatchNormBackward q = p;
  const Tensor& g = p.grad_out;
  q.grad_out = g.is_non_overlapping_and_dense() ? scratch_like(g, g.dtype()) : scratch_like(g);
  Binary(BinaryOp::ThresholdBackward, q.grad_out, g, p.relu_out, {});
  if (p.grad_residual.defined()) cpu::copy(p.grad_residual, q.grad_out);
  q.relu_out = q.bias = q.residual = q.grad_residual = Tensor();
  Run(q);
}

using DataTensors = std::initializer_list<const Tensor*>;

// What oneDNN's primitives take apart from the dtype.
std::string batch_norm_shape_rejects(const Tensor& in, DataTensors same_layout) {
  if (in.dim() < 3 || in.dim() > 5)
    return strider::detail::str("oneDNN normalizes 3-d to 5-d batches, not ", in.dim(), "-d ", in.sizes());
  return dnnl_ops::rejects_layouts("the data tensors", same_layout);
}

std::string layer_norm_shape_rejects(const Tensor&, DataTensors same_layout) {
  return dnnl_ops::rejects_layouts("the data tensors", same_layout);
}

std::string onednn_rejects(std::string (*shape_rejects)(const Tensor&, DataTensors), const Tensor& in,
                           DataTensors data) {
  if (std::string why = dnnl_ops::rejects_dtype(in.dtype()); !why.empty()) return why;
  return shape_rejects(in, data);
}

// The float32 detour takes what native oneDNN would, but in bfloat16 (statistics and affine
// parameters are float32 already).
std::string float32_rejects(std::string (*shape_rejects)(const Tensor&, DataTensors), const Tensor& in,
                           DataTensors data) {
  if (std::string why = float32_detour_rejects(data); !why.empty()) return why;
  return shape_rejects(in, data);
}

// Batch norm's plain-layout data goes to channels-last on the way (channels_last_detour.h).
void batch_norm_forward_in_float32(const BatchNormForward& p) {
  const bool cl = plain_batch_rejects({&p.in, &p.out}).empty();
  BatchNormForward q = p;
  q.in = float32_copy(p.in, cl);
  q.out = float32_empty(p.out, cl);
  dnnl_ops::batch_norm_forward(q);
  round_into(p.out, q.out);
}

void batch_norm_backward_in_float32(const BatchNormBackward& p) {
  const bool cl = plain_batch_rejects({&p.in, &p.grad_out, &p.grad_in}).empty();
  BatchNormBackward q = p;
  q.in = float32_copy(p.in, cl);
  q.grad_out = float32_copy(p.grad_out, cl);
  q.grad_in = float32_empty(p.grad_in, cl);
  dnnl_ops::batch_norm_backward(q);
  round_into(p.grad_in, q.grad_in);
}

void layer_norm_forward_in_float32(const LayerNormForward& p) {
  LayerNormForward q = p;
  q.in = float32_copy(p.in);
  q.out = float32_empty(p.out);
  dnnl_ops::layer_norm_forward(q);
  round_into(p.out, q.out);
}

void layer_norm_backward_in_float32(const LayerNormBackward& p) {
  LayerNormBackward q = p;
  q.in = float32_copy(p.in);
  q.grad_out = float32_copy(p.grad_out);
  q.grad_in = float32_empty(p.grad_in);
  dnnl_ops::layer_norm_backward(q);
  round_into(p.grad_in, q.grad_in);
}

void batch_norm_forward_in_nhwc(const BatchNormForward& p) {
  BatchNormForward q = p;
  q.in = channels_last_copy(p.in);
  q.out = channels_last_empty(p.out);
  dnnl_ops::batch_norm_forward(q);
  cpu::copy(p.out, q.out);
}

void batch_norm_backward_in_nhwc(const BatchNormBackward& p) {
  BatchNormBackward q = p;
  q.in = channels_last_copy(p.in);
  q.grad_out = channels_last_copy(p.grad_out);
  q.grad_in = channels_last_empty(p.grad_in);
  dnnl_ops::batch_norm_backward(q);
  cpu::copy(p.grad_in, q.grad_in);
}

}  // namespace

const ImplementationList<BatchNormForward>& batch_norm_forward_implementations() {
  static const ImplementationList<BatchNormForward> list = {
      {"cpu_inference", cpu::batch_norm_inference_rejects, then_relu<cpu::batch_norm_inference>},
      {kPlainKernel,
       [](const BatchNormForward& p) {
         return cpu::batch_norm_training_rejects(cpu::BatchLayout::plain, p.in, {&p.in, &p.out, &p.residual},
                                                 {&p.weight, &p.bias, &p.mean, &p.var}, p.training);
       },
       cpu::batch_norm_training_forward},
      {kChannelsLastKernel,
       [](const BatchNormForward& p) {
         return cpu::batch_norm_training_rejects(cpu::BatchLayout::channels_last, p.in,
                                                 {&p.in, &p.out, &p.residual}, {&p.weight, &p.bias, &p.mean, &p.var},
                                                 p.training);
       },
       cpu::batch_norm_channels_last_forward},
      {"onednn_nhwc", [](const BatchNormForward& p) { return detour_rejects({&p.in, &p.out}); },
       then_relu<batch_norm_forward_in_nhwc>},
      {"onednn", [](const BatchNormForward& p) { return onednn_rejects(batch_norm_shape_rejects, p.in, {&p.in, &p.out}); },
       then_relu<dnnl_ops::batch_norm_forward>},
      {"onednn_f32",
       [](const BatchNormForward& p) { return float32_rejects(batch_norm_shape_rejects, p.in, {&p.in, &p.out}); },
       then_relu<batch_norm_forward_in_float32>},
      {"ref", accept_all, then_relu<ref::batch_norm_forward, ref::unary, ref::binary>},
  };
  return list;
}

const ImplementationList<BatchNormBackward>& batch_norm_backward_implementations() {
  static const ImplementationList<BatchNormBackward> list = {
      {kPlainKernel,
       [](const BatchNormBackward& p) {
         if (std::string why = relu_mask_rejects(p, kPlainKernel); !why.empty()) return why;
         return cpu::batch_norm_training_rejects(
             cpu::BatchLayout::plain, p.in, {&p.in, &p.grad_out, &p.grad_in, &p.residual, &p.grad_residual},
             {&p.weight, &p.bias, &p.mean, &p.var, &p.grad_weight, &p.grad_bias}, p.training);
       },
       cpu::batch_norm_training_backward},
      {kChannelsLastKernel,
       [](const BatchNormBackward& p) {
         if (std::string why = relu_mask_rejects(p, kChannelsLastKernel); !why.empty()) return why;
         return cpu::batch_norm_training_rejects(
             cpu::BatchLayout::channels_last, p.in, {&p.in, &p.grad_out, &p.grad_in, &p.residual, &p.grad_residual},
             {&p.weight, &p.bias, &p.mean, &p.var, &p.grad_weight, &p.grad_bias}, p.training);
       },
       cpu::batch_norm_channels_last_backward},
      {"onednn_nhwc",
       [](const BatchNormBackward& p) { return detour_rejects({&p.in, &p.grad_out, &p.grad_in}); },
       after_relu_backward<batch_norm_backward_in_nhwc>},
      {"onednn",
       [](const BatchNormBackward& p) { return onednn_rejects(batch_norm_shape_rejects, p.in, {&p.in, &p.grad_out, &p.grad_in}); },
       after_relu_backward<dnnl_ops::batch_norm_backward>},
      {"onednn_f32",
       [](const BatchNormBackward& p) {
         return float32_rejects(batch_norm_shape_rejects, p.in, {&p.in, &p.grad_out, &p.grad_in});
       },
       after_relu_backward<batch_norm_backward_in_float32>},
      {"ref", accept_all, after_relu_backward<ref::batch_norm_backward, ref::binary>},
  };
  return list;
}

const ImplementationList<LayerNormForward>& layer_norm_forward_implementations() {
  static const ImplementationList<LayerNormForward> list = {
      {"onednn", [](const LayerNormForward& p) { return onednn_rejects(layer_norm_shape_rejects, p.in, {&p.in, &p.out}); },
       dnnl_ops::layer_norm_forward},
      {"onednn_f32",
       [](const LayerNormForward& p) { return float32_rejects(layer_norm_shape_rejects, p.in, {&p.in, &p.out}); },
       layer_norm_forward_in_float32},
      {"ref", accept_all, ref::layer_norm_forward},
  };
  return list;
}

const ImplementationList<LayerNormBackward>& layer_norm_backward_implementations() {
  static const ImplementationList<LayerNormBackward> list = {
      {"onednn",
       [](const LayerNormBackward& p) { return onednn_rejects(layer_norm_shape_rejects, p.in, {&p.in, &p.grad_out, &p.grad_in}); },
       dnnl_ops::layer_norm_backward},
      {"onednn_f32",
       [](const LayerNormBackward& p) {
         return float32_rejects(layer_norm_shape_rejects, p.in, {&p.in, &p.grad_out, &p.grad_in});
       },
       layer_norm_backward_in_float32},
      {"ref", accept_all, ref::layer_norm_backward},
  };
  return list;
}

const char* batch_norm_forward(const BatchNormForward& p, const Dispatch& d) {
  return run_first("batch_norm", batch_norm_forward_implementations(), p, d);
}
bool batch_norm_backward_recomputes_relu_mask(const char* forward_by) {
  return forward_by != nullptr &&
         (std::string(forward_by) == kPlainKernel || std::string(forward_by) == kChannelsLastKernel);
}
void batch_norm_backward(const BatchNormBackward& p, const Dispatch& d) {
  STRIDER_CHECK(p.relu_out.defined() || (!p.residual.defined() && !p.grad_residual.defined()), "batch_norm_backward",
                "a residual's gradient comes with the fused ReLU's (relu_out) only");
  STRIDER_CHECK(!p.residual.defined() || p.grad_residual.defined(), "batch_norm_backward",
                "a residual comes with its grad_residual");
  run_first("batch_norm_backward", batch_norm_backward_implementations(), p, d);
}
void layer_norm_forward(const LayerNormForward& p, const Dispatch& d) {
  run_first("layer_norm", layer_norm_forward_implementations(), p, d);
}
void layer_norm_backward(const LayerNormBackward& p, const Dispatch& d) {
  run_first("layer_norm_backward", layer_norm_backward_implementations(), p, d);
}

}  // namespace strider::kernels
