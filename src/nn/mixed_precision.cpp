#include "strider/nn/mixed_precision.h"

#include <cmath>
#include <set>

#include "strider/autograd/functions.h"
#include "strider/autograd/grad_mode.h"

namespace strider::nn {

CastParameters::CastParameters(Module& root, ScalarType dtype) {
  for (auto& [path, m] : root.named_modules()) {
    if (m->type_name().rfind("BatchNorm", 0) == 0) continue;
    for (auto& [name, p] : m->named_parameters(/*recurse=*/false, /*remove_duplicate=*/false)) {
      if (!is_floating_point(p.dtype()) || p.dtype() == dtype) continue;
      swaps_.push_back({m, name, p});
      m->set_param(name, p.to(dtype));
    }
  }
}

CastParameters::~CastParameters() {
  for (auto& s : swaps_) s.module->set_param(s.name, s.master);
}

LossScaler::LossScaler(double init_scale, double growth, double backoff, int64_t interval)
    : scale_(init_scale), growth_(growth), backoff_(backoff), interval_(interval) {
  STRIDER_CHECK(std::isfinite(init_scale) && init_scale > 0, "LossScaler", "init_scale ", init_scale,
                " must be finite and positive (PyTorch's default is 65536)");
  STRIDER_CHECK(std::isfinite(growth) && growth > 1, "LossScaler", "growth ", growth,
                " must be greater than 1 (PyTorch's growth_factor; default 2)");
  STRIDER_CHECK(backoff > 0 && backoff < 1, "LossScaler", "backoff ", backoff,
                " must lie in (0, 1) (PyTorch's backoff_factor; default 0.5)");
  STRIDER_CHECK(interval > 0, "LossScaler", "interval ", interval,
                " must be positive (PyTorch's growth_interval; default 2000)");
}

Tensor LossScaler::scale(const Tensor& loss) const { return loss * scale_; }

bool LossScaler::unscale_and_check(const std::vector<Tensor>& params) {
  autograd::NoGradGuard g;
  bool finite = true;
  std::set<const TensorImpl*> seen;
  for (const Tensor& p : params) {
    if (!p.grad().defined() || !seen.insert(p.impl()).second) continue;
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
