#pragma once
// Reverse-mode execution: nodes run in dependency order (latest-created first among the ready
// ones), gradients reaching the same input are summed, leaves accumulate into .grad().
#include <functional>
#include <vector>

#include "strider/core/tensor.h"

namespace strider::autograd {

// Backpropagates `grad_outputs` (one per root; undefined means ones for a 1-element root).
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_outputs = {},
              bool retain_graph = false);

// Gradients of `outputs` w.r.t. `inputs` without touching .grad() (torch.autograd.grad). An input
// the outputs do not depend on gets an undefined tensor, as PyTorch's allow_unused=True gives None
// (its default raises).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false);

// Runs `fn` once the backward pass that is currently running has finished every node (PyTorch's
// queue_callback). FSDP uses it to finish gradient communication. Throws outside a backward.
void queue_callback(std::function<void()> fn);

}  // namespace strider::autograd
