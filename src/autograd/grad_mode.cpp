#include "strider/autograd/grad_mode.h"

#include "strider/core/context.h"

namespace strider::autograd {

bool GradMode::is_enabled() { return Context::this_thread().grad_enabled; }
void GradMode::set_enabled(bool enabled) { Context::this_thread().grad_enabled = enabled; }

}  // namespace strider::autograd
