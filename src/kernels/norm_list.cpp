// The normalization implementation lists: oneDNN where it computes the problem, then the reference.
#include "kernels/dnnl/context.h"
#include "kernels/norm.h"

namespace strider::kernels {
namespace {

std::string accept_all(const auto&) { return ""; }

std::string onednn_rejects_batch_norm(const Tensor& in, std::initializer_list<const Tensor*> same_layout) {
  if (std::string why = dnnl_ops::rejects_dtype(in.dtype()); !why.empty()) return why;
  if (in.dim() < 3 || in.dim() > 5)
    return strider::detail::str("oneDNN normalizes 3-d to 5-d batches, not ", in.dim(), "-d ", in.sizes());
  return dnnl_ops::rejects_layouts("the data tensors", same_layout);
}

std::string onednn_rejects_layer_norm(const Tensor& in, std::initializer_list<const Tensor*> same_layout) {
  if (std::string why = dnnl_ops::rejects_dtype(in.dtype()); !why.empty()) return why;
  return dnnl_ops::rejects_layouts("the data tensors", same_layout);
}

}  // namespace

const ImplementationList<BatchNormForward>& batch_norm_forward_implementations() {
  static const ImplementationList<BatchNormForward> list = {
      {"onednn", [](const BatchNormForward& p) { return onednn_rejects_batch_norm(p.in, {&p.in, &p.out}); },
       dnnl_ops::batch_norm_forward},
      {"ref", accept_all, ref::batch_norm_forward},
  };
  return list;
}

const ImplementationList<BatchNormBackward>& batch_norm_backward_implementations() {
  static const ImplementationList<BatchNormBackward> list = {
      {"onednn",
       [](const BatchNormBackward& p) { return onednn_rejects_batch_norm(p.in, {&p.in, &p.grad_out, &p.grad_in}); },
       dnnl_ops::batch_norm_backward},
      {"ref", accept_all, ref::batch_norm_backward},
  };
  return list;
}

const ImplementationList<LayerNormForward>& layer_norm_forward_implementations() {
  static const ImplementationList<LayerNormForward> list = {
      {"onednn", [](const LayerNormForward& p) { return onednn_rejects_layer_norm(p.in, {&p.in, &p.out}); },
       dnnl_ops::layer_norm_forward},
      {"ref", accept_all, ref::layer_norm_forward},
  };
  return list;
}

const ImplementationList<LayerNormBackward>& layer_norm_backward_implementations() {
  static const ImplementationList<LayerNormBackward> list = {
      {"onednn",
       [](const LayerNormBackward& p) { return onednn_rejects_layer_norm(p.in, {&p.in, &p.grad_out, &p.grad_in}); },
       dnnl_ops::layer_norm_backward},
      {"ref", accept_all, ref::layer_norm_backward},
  };
  return list;
}

void batch_norm_forward(const BatchNormForward& p, const Dispatch& d) {
  run_first("batch_norm", batch_norm_forward_implementations(), p, d);
}
void batch_norm_backward(const BatchNormBackward& p, const Dispatch& d) {
  run_first("batch_norm_backward", batch_norm_backward_implementations(), p, d);
}
void layer_norm_forward(const LayerNormForward& p, const Dispatch& d) {
  run_first("layer_norm", layer_norm_forward_implementations(), p, d);
}
void layer_norm_backward(const LayerNormBackward& p, const Dispatch& d) {
  run_first("layer_norm_backward", layer_norm_backward_implementations(), p, d);
}

}  // namespace strider::kernels
