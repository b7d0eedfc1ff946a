#pragma once
// Recording an op in the graph, and custom differentiable functions. Every differentiable op in
// strider is "compute without grad, then record(...)"; a user's custom function is the same:
//
//   Tensor y = autograd::record("my_op", {&x}, compute(x), [](auto& grads, auto& node) {
//     return std::vector<Tensor>{grads[0] * 2};
//   });
#include <initializer_list>
#include <vector>

#include "strider/autograd/grad_mode.h"
#include "strider/autograd/node.h"

namespace strider::autograd {

// True when grad mode is on and any input requires grad: only then is a node worth recording.
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);

// Attaches `outputs` to a new FunctionNode computing input gradients with `backward`.
// A no-op (and `backward` is dropped) when no input requires grad or grad mode is off.
void record(const char* name, std::initializer_list<const Tensor*> inputs,
            std::initializer_list<Tensor*> outputs, BackwardFn backward);

// For ops over a list of tensors (cat, stack): one next edge per list element.
void record(const char* name, const std::vector<Tensor>& inputs, Tensor* output, BackwardFn backward);

// Several outputs over a list of inputs (pass-through nodes of wrappers such as FSDP, over a
// module's outputs): outputs[i] becomes output i of the node.
void record(const char* name, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs, BackwardFn backward);

// Single-output convenience: records and returns `output`.
inline Tensor record(const char* name, std::initializer_list<const Tensor*> inputs, Tensor output,
                     BackwardFn backward) {
  record(name, inputs, {&output}, std::move(backward));
  return output;
}

// Throws when an in-place op would write into a tensor that autograd needs (a leaf requiring
// grad, or any tensor in a graph, while grad mode is on); otherwise bumps the storage version.
void check_inplace(const Tensor& t, const char* op);

}  // namespace strider::autograd
