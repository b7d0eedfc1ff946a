#include "strider/nn/mixed_precision.h"

#include <cmath>

#include "strider/autograd/functions.h"
#include "strider/autograd/grad_mode.h"

namespace strider::nn {

CastParameters::CastParameters(Module& root, ScalarType dtype) {
  for (auto& [path, m] : root.named_modules()) {
    if (m->type_name().rfind("BatchNorm", 0) == 0) continue;
    for (auto& [name, p] : m->named_parameters(/*recurse=*/false)) {
      if (!is_floating_point(p.dtype()) || p.dtype() == dtype) continue;
      swaps_.push_back({m, name, p});
      m->set_param(name, p.to(dtype));
    }
  }
}

CastParameters::~CastParameters() {
  for (auto& s : swaps_) s.module->set_param(s.name, s.master);
}

Tensor LossScaler::scale(const Tensor& loss) const { return loss * scale_; }

bool LossScaler::unscale_and_check(const std::vector<Tensor>& params) {
  autograd::NoGradGuard g;
  bool finite = true;
  for (const Tensor& p : params) {
    if (!p.grad().defined()) continue;
    mul_(p.grad(), 1.0 / scale_);
    const double s = sum(abs(p.grad().to(kDouble))).item<double>();
    finite &= std::isfinite(s);
  }
  if (!finite) {
    scale_ *= backoff_;
    good_steps_ = 0;
    return false;
  }
  if (++good_steps_ % interval_ == 0) scale_ *= growth_;
  return true;
}

}  // namespace strider::nn
