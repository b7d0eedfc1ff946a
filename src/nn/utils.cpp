#include "strider/nn/utils.h"

#include <cmath>
#include <limits>

#include "strider/autograd/functions.h"
#include "strider/autograd/grad_mode.h"

namespace strider::nn::utils {
namespace {

void convert(Module& module, MemoryFormat fmt, std::initializer_list<const char*> types) {
  autograd::NoGradGuard g;
  for (auto& [name, m] : module.named_modules())
    if (m->owner()) m->owner()->check_conversion(*m, "convert_conv_weight_memory_format");
  for (auto& [name, m] : module.named_modules()) {
    bool match = false;
    for (const char* t : types) match |= m->type_name() == t;
    if (!match || !m->has_param("weight")) continue;
    const Tensor& w = m->param("weight");
    Tensor c = w.detach().clone().contiguous(fmt);
    c.resize_(c.sizes(), fmt);
    w.set_data(c);  // PyTorch's weight.data = ...: an optimizer holding the weight keeps it
  }
}

}  // namespace

void convert_conv2d_weight_memory_format(Module& module, MemoryFormat fmt) {
  convert(module, fmt, {"Conv2d", "ConvTranspose2d"});
}

void convert_conv3d_weight_memory_format(Module& module, MemoryFormat fmt) {
  convert(module, fmt, {"Conv3d", "ConvTranspose3d"});
}

double grad_norm(const std::vector<Tensor>& parameters, double norm_type) {
  for (const Tensor& p : parameters)
    if (const std::string* owner = p.defined() ? p.storage()->shard_of() : nullptr)
      STRIDER_CHECK(false, "clip_grad_norm_", "a parameter of shape ", p.sizes(), " is this rank's shard of ", *owner,
                    ", so a norm over these tensors would be this rank's part only and differ between ranks; clip "
                    "through the wrapper (model->clip_grad_norm_(max_norm)), which sums over every rank");
  autograd::NoGradGuard g;
  double total = 0;
  const bool inf = std::isinf(norm_type);
  for (const Tensor& p : parameters) {
    const Tensor& gr = p.grad();
    if (!gr.defined() || gr.numel() == 0) continue;
    Tensor a = abs(gr.to(kDouble));
    if (inf) total = std::max(total, amax(a).item<double>());
    else total += sum(pow(a, norm_type)).item<double>();
  }
  return inf ? total : std::pow(total, 1.0 / norm_type);
}

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type) {
  STRIDER_CHECK(max_norm > 0, "clip_grad_norm_", "max_norm must be positive, got ", max_norm);
  const double norm = grad_norm(parameters, norm_type);
  STRIDER_CHECK(std::isfinite(norm), "clip_grad_norm_", "the total norm of the gradients is non-finite (", norm,
                "); check the loss for NaN/inf");
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1) {
    autograd::NoGradGuard g;
    for (const Tensor& p : parameters)
      if (p.grad().defined()) mul_(p.grad(), coef);
  }
  return norm;
}

}  // namespace strider::nn::utils
