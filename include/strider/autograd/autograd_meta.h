#pragma once
// The autograd state a TensorImpl carries through core's AutogradMetaInterface slot.
#include <vector>

#include "strider/autograd/node.h"

namespace strider::autograd {

struct AutogradMeta final : AutogradMetaInterface {
  bool requires_grad = false;
  Tensor grad;
  Tensor grad_buffer;                          // where gradients accumulate in place (grad_buffer.h)
  std::shared_ptr<Node> grad_fn;               // null for leaves
  uint32_t output_nr = 0;
  std::weak_ptr<Node> grad_accumulator;        // a leaf's AccumulateGrad, while a graph holds it
  std::vector<std::pair<int, TensorHook>> leaf_hooks;
  std::vector<std::function<void(const Tensor&)>> post_accumulate_hooks;
  bool retains_grad = false;
};

// Null when the tensor has never been part of autograd.
AutogradMeta* meta_of(const Tensor& t);
AutogradMeta& ensure_meta(const Tensor& t);

// The edge a gradient for `t` must flow into: its grad_fn, or its leaf accumulator.
// Invalid when t does not require grad.
Edge gradient_edge(const Tensor& t);

}  // namespace strider::autograd
