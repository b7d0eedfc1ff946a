#pragma once
// Activation checkpointing (PyTorch's torch.utils.checkpoint and apply_activation_checkpointing):
// a checkpointed module's forward runs without recording the graph, so none of its intermediate
// activations stay alive; only its inputs do. Backward runs the forward again, recording, with
// the default generator put back where it was, so dropout draws the same mask, and then
// backpropagates through that recomputation. Gradients are the same, bit for bit, as without
// checkpointing, and so is the state: batch norm's recomputation does not update its running
// statistics a second time (PyTorch's does); the price is one more forward of the module.
//
//   nn::apply_activation_checkpointing(*gpt, [](nn::Module& m) { return m.type_name() == "Block"; });
//   auto model = fsdp::FullyShardedDataParallel::wrap(gpt, pg, options);  // either order works
//
// Checkpointing sets a call wrapper on the module itself (nn::Module::register_call_wrapper),
// so names, state dicts and FSDP's wrap policies are unchanged, and it works however the
// parent calls the module. The wrapper runs outside the module's forward hooks, so FSDP's
// gather happens inside both runs; FSDP sees in_checkpointed_forward() and in_recomputation()
// and gathers a unit as often as without checkpointing: the recomputation and the backward
// that follows it share one gather.
//
// Under no_grad, a checkpointed module runs plainly. Its inputs must not be changed in place
// between forward and backward (an error names the module); its parameters must not either,
// which, as in PyTorch, is not detected (the recomputation would use the new values). Like PyTorch's reentrant variant,
// the recomputation's own backward accumulates the module's parameter gradients into .grad(),
// also under autograd::grad (which returns the gradients of the inputs, as usual).
#include <functional>

#include "strider/nn/module.h"

namespace strider::nn {

// Checkpoints `module` (idempotent).
void checkpoint(Module& module);
// Checkpoints every module under `root` (root included) for which check_fn is true; returns how
// many. A module inside one already checkpointed is still checkpointed (its recomputation then
// recomputes it once more in its own backward), as in PyTorch.
int apply_activation_checkpointing(Module& root, const std::function<bool(Module&)>& check_fn);
bool is_checkpointed(const Module& module);

// True during a checkpointed module's first, unrecorded forward (grad mode is off, yet the
// step is training: FSDP keeps units as a training forward would) ...
bool in_checkpointed_forward();
// ... and while it is recomputed in backward (on this thread).
bool in_recomputation();

}  // namespace strider::nn
