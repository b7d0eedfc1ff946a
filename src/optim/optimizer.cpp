#include "strider/optim/optimizer.h"

#include <cmath>

#include "strider/autograd/functions.h"
#include "strider/autograd/grad_mode.h"
#include "strider/ops/factory.h"

namespace strider::optim {

Optimizer::Optimizer(NamedParameters params, double lr) : params_(std::move(params)), lr_(lr) {
  STRIDER_CHECK(!params_.empty(), "optimizer", "got an empty parameter list");
  STRIDER_CHECK(lr >= 0, "optimizer", "invalid learning rate ", lr);
  for (auto& [n, p] : params_)
    STRIDER_CHECK(p.defined() && is_floating_point(p.dtype()), "optimizer", "parameter '", n,
                  "' must be a defined floating-point tensor");
}

void Optimizer::zero_grad() {
  for (auto& [n, p] : params_) p.set_grad(Tensor());
}

void Optimizer::set_params(NamedParameters params) { params_ = std::move(params); }

SGD::SGD(NamedParameters params, SGDOptions o) : Optimizer(std::move(params), o.lr), o_(o) {
  STRIDER_CHECK(o.momentum >= 0 && o.weight_decay >= 0, "SGD", "momentum and weight_decay must be >= 0");
  STRIDER_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0), "SGD",
                "nesterov momentum requires a momentum and zero dampening");
}

void SGD::step() {
  autograd::NoGradGuard g;
  ++steps_;
  for (auto& [name, p] : params_) {
    if (!p.grad().defined()) continue;
    Tensor d = p.grad();
    if (d.dtype() != p.dtype()) d = d.to(p.dtype());
    if (o_.weight_decay != 0) d = add(d, p, o_.weight_decay);
    if (o_.momentum != 0) {
      auto& st = state_[name];
      auto it = st.find("momentum_buffer");
      if (it == st.end()) {
        st["momentum_buffer"] = d.clone();
      } else {
        mul_(it->second, o_.momentum);
        add_(it->second, d, 1.0 - o_.dampening);
      }
      Tensor& buf = st["momentum_buffer"];
      d = o_.nesterov ? add(d, buf, o_.momentum) : buf;
    }
    add_(p, d, -lr_);
  }
}

Adam::Adam(NamedParameters params, AdamOptions o) : Optimizer(std::move(params), o.lr), o_(o) {
  STRIDER_CHECK(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1, "Adam", "betas must be in [0, 1), got ",
                o.beta1, " and ", o.beta2);
  STRIDER_CHECK(o.eps >= 0, "Adam", "eps must be >= 0");
}

AdamW::AdamW(NamedParameters params, AdamOptions o) : Adam(std::move(params), [&] {
  o.decoupled_weight_decay = true;
  return o;
}()) {}

void Adam::step() {
  autograd::NoGradGuard g;
  ++steps_;
  const double bc1 = 1.0 - std::pow(o_.beta1, static_cast<double>(steps_));
  const double bc2 = 1.0 - std::pow(o_.beta2, static_cast<double>(steps_));
  for (auto& [name, p] : params_) {
    if (!p.grad().defined()) continue;
    Tensor grad = p.grad().dtype() == p.dtype() ? p.grad() : p.grad().to(p.dtype());
    if (o_.weight_decay != 0) {
      if (o_.decoupled_weight_decay) mul_(p, 1.0 - lr_ * o_.weight_decay);
      else grad = add(grad, p, o_.weight_decay);
    }
    auto& st = state_[name];
    if (!st.count("exp_avg")) {
      st["exp_avg"] = zeros_like(p);
      st["exp_avg_sq"] = zeros_like(p);
    }
    Tensor& m = st["exp_avg"];
    Tensor& v = st["exp_avg_sq"];
    mul_(m, o_.beta1);
    add_(m, grad, 1.0 - o_.beta1);
    mul_(v, o_.beta2);
    add_(v, mul(grad, grad), 1.0 - o_.beta2);
    Tensor denom = add(div(sqrt(v), std::sqrt(bc2)), o_.eps);
    add_(p, div(m, denom), -lr_ / bc1);
  }
}

}  // namespace strider::optim
