#include "strider/nn/utils.h"

#include <cmath>
#include <limits>
#include <set>
#include <vector>

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

namespace {

// torch.norm of a vector with any p: max |x| (inf), min |x| (-inf), the count of non-zeros (0),
// else (sum |x|^p)^(1/p).
double p_norm(const std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  double acc = p == -INFINITY ? INFINITY : 0;
  for (double x : v) {
    const double a = std::fabs(x);
    if (p == INFINITY) acc = std::max(acc, a);
    else if (p == -INFINITY) acc = std::min(acc, a);
    else if (p == 0) acc += a != 0;
    else acc += std::pow(a, p);
  }
  return std::isinf(p) || p == 0 ? acc : std::pow(acc, 1.0 / p);
}

}  // namespace

double grad_norm(const std::vector<Tensor>& parameters, double norm_type) {
  STRIDER_CHECK(!std::isnan(norm_type), "clip_grad_norm_", "norm_type is NaN");
  for (const Tensor& p : parameters)
    if (const std::string* owner = p.defined() ? p.storage()->shard_of() : nullptr)
      STRIDER_CHECK(false, "clip_grad_norm_", "a parameter of shape ", p.sizes(), " is this rank's shard of ", *owner,
                    ", so a norm over these tensors would be this rank's part only and differ between ranks; clip "
                    "through the wrapper (model->clip_grad_norm_(max_norm)), which sums over every rank");
  autograd::NoGradGuard g;
  // PyTorch 1.13's two levels: each gradient's norm, then the norm of those norms (the same as
  // one norm over every element for p > 0; for p = 0 it counts the gradients holding a non-zero).
  std::vector<double> norms;
  std::set<const TensorImpl*> seen;  // a tensor listed twice counts once
  for (const Tensor& p : parameters) {
    const Tensor& gr = p.grad();
    if (!gr.defined() || !seen.insert(gr.impl()).second) continue;
    if (gr.numel() == 0) {
      norms.push_back(0);
      continue;
    }
    Tensor a = abs(gr.to(kDouble));
    if (norm_type == INFINITY) norms.push_back(amax(a).item<double>());
    else if (norm_type == -INFINITY) norms.push_back(amin(a).item<double>());
    else if (norm_type == 0) norms.push_back(sum(ne(a, 0)).item<double>());
    else norms.push_back(std::pow(sum(pow(a, norm_type)).item<double>(), 1.0 / norm_type));
  }
  return p_norm(norms, norm_type);
}

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type) {
  STRIDER_CHECK(max_norm >= 0, "clip_grad_norm_", "max_norm must not be negative, got ", max_norm,
                " (a negative factor would flip the gradients)");
  const double norm = grad_norm(parameters, norm_type);
  STRIDER_CHECK(std::isfinite(norm), "clip_grad_norm_", "the total norm of the gradients is non-finite (", norm,
                "); check the loss for NaN/inf");
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1) {
    autograd::NoGradGuard g;
    std::set<const TensorImpl*> seen;  // a tensor listed twice is scaled once
    for (const Tensor& p : parameters)
      if (p.grad().defined() && seen.insert(p.grad().impl()).second) mul_(p.grad(), coef);
  }
  return norm;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  STRIDER_CHECK(clip_value >= 0, "clip_grad_value_", "clip_value must not be negative, got ", clip_value);
  autograd::NoGradGuard g;
  std::set<const TensorImpl*> seen;
  for (const Tensor& p : parameters)
    if (p.grad().defined() && seen.insert(p.grad().impl()).second)
      clamp_(p.grad(), -clip_value, clip_value);
}

Tensor parameters_to_vector(const std::vector<Tensor>& parameters) {
  STRIDER_CHECK(!parameters.empty(), "parameters_to_vector", "no tensors given");
  autograd::NoGradGuard g;
  std::vector<Tensor> flat;
  for (const Tensor& p : parameters) {
    STRIDER_CHECK(p.defined(), "parameters_to_vector", "tensor ", flat.size(), " is undefined");
    STRIDER_CHECK(p.dtype() == parameters.front().dtype(), "parameters_to_vector", "tensor ", flat.size(), " is ",
                  p.dtype(), " but the first is ", parameters.front().dtype(), "; convert them to one dtype");
    flat.push_back(p.reshape({p.numel()}));
  }
  return cat(flat, 0);
}

void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters) {
  STRIDER_CHECK(vec.defined() && vec.dim() == 1, "vector_to_parameters", "expects a 1-d vector, got ",
                vec.defined() ? vec.sizes() : IntArrayRef());
  int64_t total = 0;
  for (const Tensor& p : parameters) {
    STRIDER_CHECK(p.defined(), "vector_to_parameters", "a parameter is undefined");
    total += p.numel();
  }
  STRIDER_CHECK(total == vec.numel(), "vector_to_parameters", "the vector holds ", vec.numel(),
                " elements but the parameters ", total);
  autograd::NoGradGuard g;
  int64_t at = 0;
  for (const Tensor& p : parameters) {
    p.copy_(vec.narrow(0, at, p.numel()).view(p.sizes()));
    at += p.numel();
  }
}

}  // namespace strider::nn::utils
