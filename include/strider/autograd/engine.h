#pragma once
// Reverse-mode execution: nodes run in dependency order (latest-created first among the ready
// ones), gradients reaching the same input are summed, leaves accumulate into .grad().
#include <vector>

#include "strider/core/tensor.h"

namespace strider::autograd {

// Backpropagates `grad_outputs` (one per root; undefined means ones for a 1-element root).
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_outputs = {},
              bool retain_graph = false);

// Gradients of `outputs` w.r.t. `inputs` without touching .grad() (torch.autograd.grad).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false);

}  // namespace strider::autograd
