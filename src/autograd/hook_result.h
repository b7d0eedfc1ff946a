#pragma once
// A gradient hook may replace a gradient but not change its shape or dtype (PyTorch checks the
// same: "hook has changed the size of value"); a leaf's .grad of another shape would otherwise
// broadcast into the optimizer's update.
#include "strider/core/error.h"
#include "strider/core/tensor.h"

namespace strider::autograd {

inline Tensor checked_hook_result(const Tensor& before, const Tensor& after) {
  STRIDER_CHECK(after.sizes() == before.sizes(), "register_hook", "a hook changed the gradient's shape from ",
                before.sizes(), " to ", after.sizes(), "; return a gradient of the shape it was given");
  STRIDER_CHECK(after.dtype() == before.dtype(), "register_hook", "a hook changed the gradient's dtype from ",
                before.dtype(), " to ", after.dtype(), "; return a gradient of the dtype it was given");
  return after;
}

}  // namespace strider::autograd
