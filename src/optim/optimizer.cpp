#include "strider/optim/optimizer.h"

#include "strider/ops/optimizer_step.h"

#include <algorithm>
#include <cmath>

#include "strider/autograd/functions.h"
#include "strider/autograd/grad_mode.h"
#include "strider/ops/factory.h"

namespace strider::optim {
namespace {

bool all_finite(const Tensor& t) {
  autograd::NoGradGuard g;
  return std::isfinite(sum(abs(t.to(kDouble))).item<double>());  // any NaN or infinity survives the sum
}

}  // namespace

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

void Optimizer::check_params_alive() const {
  // A parameter whose values moved elsewhere (FSDP's wrap moves them into shards) never gets a
  // gradient again; stepping it would silently train nothing.
  for (const auto& [name, p] : params_)
    if (const std::string* why = p.storage()->retired_reason())
      STRIDER_CHECK(false, "optimizer", "parameter '", name, "' can no longer be stepped: ", *why);
}

void Optimizer::step() {
  check_params_alive();
  if (!stepped_by_.empty()) {
    for (auto& [name, p] : params_)
      STRIDER_CHECK(!p.grad().defined(), "optimizer", "parameter '", name, "' holds a gradient of shape ",
                    p.grad().sizes(), ", but ", stepped_by_, " applies this optimizer's updates as gradients arrive, "
                    "so step() applies nothing; a gradient set outside it would be ignored: drop it (zero_grad) "
                    "or register the optimizer for ordinary steps");
    return;
  }
  begin_partial_step();
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].second.grad().defined()) update_parameter(i);
  end_partial_step();
}

void Optimizer::begin_partial_step() {
  check_params_alive();
  for (auto& [handle, hook] : pre_hooks_) hook();
  autograd::NoGradGuard g;
  begin_step();
}

void Optimizer::update_parameter(size_t index) {
  STRIDER_CHECK(index < params_.size(), "optimizer", "parameter index ", index, " is out of range for ",
                params_.size(), " parameters");
  auto& [name, p] = params_[index];
  STRIDER_CHECK(p.grad().defined(), "optimizer", "parameter '", name, "' has no gradient to update with");
  autograd::NoGradGuard g;
  for (auto& [handle, hooks] : param_hooks_)
    if (hooks.before) hooks.before(index);
  update(name, p, state_[name]);
  for (auto& [handle, hooks] : param_hooks_)
    if (hooks.after) hooks.after(index);
}

void Optimizer::end_partial_step() {
  for (auto& [handle, hook] : post_hooks_) hook();
}

int Optimizer::register_step_pre_hook(std::function<void()> hook) {
  STRIDER_CHECK(hook != nullptr, "register_step_pre_hook", "got an empty hook");
  pre_hooks_[next_hook_] = std::move(hook);
  return next_hook_++;
}

int Optimizer::register_step_post_hook(std::function<void()> hook) {
  STRIDER_CHECK(hook != nullptr, "register_step_post_hook", "got an empty hook");
  post_hooks_[next_hook_] = std::move(hook);
  return next_hook_++;
}

int Optimizer::register_param_update_hooks(ParamUpdateHooks hooks) {
  STRIDER_CHECK(hooks.before || hooks.after, "register_param_update_hooks", "got no hook");
  param_hooks_[next_hook_] = std::move(hooks);
  return next_hook_++;
}

void Optimizer::remove_step_hook(int handle) {
  pre_hooks_.erase(handle);
  post_hooks_.erase(handle);
  param_hooks_.erase(handle);
}

void Optimizer::load_state(const OptimizerState& state, int64_t step_count, const std::string& what) {
  autograd::NoGradGuard no_grad;
  STRIDER_CHECK(step_count >= 0, "load_state", what, ": step count ", step_count, " is negative");
  std::map<std::string, const Tensor*> by_name;
  for (auto& [n, p] : params_) by_name[n] = &p;
  const std::vector<std::string> keys = state_keys();
  OptimizerState fresh;
  for (auto& [pname, entries] : state) {
    auto it = by_name.find(pname);
    STRIDER_CHECK(it != by_name.end(), "load_state", what, " has ", name(), " state for '", pname,
                  "', which is not a parameter of this optimizer");
    const Tensor& p = *it->second;
    for (auto& [key, v] : entries)
      STRIDER_CHECK(std::find(keys.begin(), keys.end(), key) != keys.end(), "load_state", what, ": '", pname, ".",
                    key, "' is not ", name(), " state (", name(), " keeps ", keys.size(), " tensors per parameter)");
    for (const std::string& key : keys) {
      auto e = entries.find(key);
      STRIDER_CHECK(e != entries.end(), "load_state", what, ": parameter '", pname, "' lacks its ", name(), " state '",
                    key, "'");
      const Tensor& v = e->second;
      STRIDER_CHECK(v.defined() && v.sizes() == p.sizes() && v.dtype() == p.dtype(), "load_state", what, ": state '",
                    pname, ".", key, "' is ", v.defined() ? v.sizes() : IntArrayRef(), " ",
                    v.defined() ? to_string(v.dtype()) : "undefined", " but the parameter is ", p.sizes(), " ",
                    p.dtype());
      Tensor copy = empty_like(p);
      copy.copy_(v);
      STRIDER_CHECK(all_finite(copy), "load_state", what, ": state '", pname, ".", key,
                    "' holds NaN or infinite values");
      fresh[pname][key] = copy;
    }
  }
  if (step_count > 0 && !keys.empty())
    for (auto& [pname, p] : params_)
      STRIDER_CHECK(!p.requires_grad() || fresh.count(pname), "load_state", what, " has no ", name(),
                    " state for parameter '", pname, "' after ", step_count, " steps");
  state_ = std::move(fresh);
  steps_ = step_count;
}

std::vector<std::string> SGD::state_keys() const {
  if (o_.momentum == 0) return {};
  return {"momentum_buffer"};
}

SGD::SGD(NamedParameters params, SGDOptions o) : Optimizer(std::move(params), o.lr), o_(o) {
  STRIDER_CHECK(o.momentum >= 0 && o.weight_decay >= 0, "SGD", "momentum and weight_decay must be >= 0");
  STRIDER_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0), "SGD",
                "nesterov momentum requires a momentum and zero dampening");
}

void SGD::update(const std::string&, Tensor& p, std::map<std::string, Tensor>& st) {
  Tensor d = p.grad();
  if (d.dtype() != p.dtype()) d = d.to(p.dtype());
  if (o_.weight_decay != 0) d = add(d, p, o_.weight_decay);
  if (o_.momentum != 0) {
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

Adam::Adam(NamedParameters params, AdamOptions o) : Optimizer(std::move(params), o.lr), o_(o) {
  STRIDER_CHECK(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1, "Adam", "betas must be in [0, 1), got ",
                o.beta1, " and ", o.beta2);
  STRIDER_CHECK(o.eps >= 0, "Adam", "eps must be >= 0");
}

AdamW::AdamW(NamedParameters params, AdamOptions o) : Adam(std::move(params), [&] {
  o.decoupled_weight_decay = true;
  return o;
}()) {}

void Adam::begin_step() {
  ++steps_;
  bias_correction1_ = 1.0 - std::pow(o_.beta1, static_cast<double>(steps_));
  bias_correction2_ = 1.0 - std::pow(o_.beta2, static_cast<double>(steps_));
}

void Adam::update(const std::string&, Tensor& p, std::map<std::string, Tensor>& st) {
  const double bc1 = bias_correction1_, bc2 = bias_correction2_;
  Tensor grad = p.grad().dtype() == p.dtype() ? p.grad() : p.grad().to(p.dtype());
  if (!st.count("exp_avg")) {
    st["exp_avg"] = zeros_like(p);
    st["exp_avg_sq"] = zeros_like(p);
  }
  Tensor& m = st["exp_avg"];
  Tensor& v = st["exp_avg_sq"];
  // One pass over contiguous float32 tensors (FSDP's flat shards); the same bits as below.
  if (ops::try_fused_adam_step_(p, grad, m, v,
                                {.lr = lr_, .beta1 = o_.beta1, .beta2 = o_.beta2, .eps = o_.eps,
                                 .weight_decay = o_.weight_decay, .decoupled_weight_decay = o_.decoupled_weight_decay,
                                 .bias_correction1 = bc1, .bias_correction2 = bc2}))
    return;
  if (o_.weight_decay != 0) {
    if (o_.decoupled_weight_decay) mul_(p, 1.0 - lr_ * o_.weight_decay);
    else grad = add(grad, p, o_.weight_decay);
  }
  mul_(m, o_.beta1);
  add_(m, grad, 1.0 - o_.beta1);
  mul_(v, o_.beta2);
  add_(v, mul(grad, grad), 1.0 - o_.beta2);
  Tensor denom = add(div(sqrt(v), std::sqrt(bc2)), o_.eps);
  add_(p, div(m, denom), -lr_ / bc1);
}

}  // namespace strider::optim
