#include "strider/optim/adam.h"

#include <cmath>

#include "optim/option_table.h"
#include "strider/autograd/functions.h"
#include "strider/ops/factory.h"
#include "strider/ops/optimizer_step.h"

namespace strider::optim {

const detail::OptionTable<AdamOptions>& detail::adam_option_table(bool decoupled) {
  static auto make = [](const char* name) {
    return detail::OptionTable<AdamOptions>{
        .optimizer = name,
        .numbers = {{"lr", &AdamOptions::lr}, {"beta1", &AdamOptions::beta1}, {"beta2", &AdamOptions::beta2},
                    {"eps", &AdamOptions::eps}, {"weight_decay", &AdamOptions::weight_decay}},
        .flags = {{"amsgrad", &AdamOptions::amsgrad}, {"maximize", &AdamOptions::maximize}}};
  };
  static const detail::OptionTable<AdamOptions> adam = make("Adam"), adamw = make("AdamW");
  return decoupled ? adamw : adam;
}

namespace {

const detail::OptionTable<AdamOptions>& table(bool decoupled) { return detail::adam_option_table(decoupled); }

// PyTorch 1.13's checks.
void check(const AdamOptions& o, const std::string& where) {
  const char* op = o.decoupled_weight_decay ? "AdamW" : "Adam";
  STRIDER_CHECK(o.lr >= 0, op, where, ": invalid learning rate ", o.lr, "; it must be >= 0");
  STRIDER_CHECK(o.eps >= 0, op, where, ": invalid eps ", o.eps, "; it must be >= 0");
  STRIDER_CHECK(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1, op, where,
                ": betas must be in [0, 1), got ", o.beta1, " and ", o.beta2);
  STRIDER_CHECK(o.weight_decay >= 0, op, where, ": invalid weight_decay ", o.weight_decay, "; it must be >= 0");
}

AdamOptions decoupled(const AdamWOptions& w) {
  return {.lr = w.lr, .beta1 = w.beta1, .beta2 = w.beta2, .eps = w.eps, .weight_decay = w.weight_decay,
          .amsgrad = w.amsgrad, .maximize = w.maximize, .decoupled_weight_decay = true};
}

}  // namespace

Adam::Adam(NamedParameters params, AdamOptions options)
    : Adam(std::vector<ParamGroup>{{std::move(params), {}}}, options) {}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions options) : defaults_(options) {
  add_param_groups(std::move(groups));
}

AdamW::AdamW(NamedParameters params, AdamWOptions options) : Adam(std::move(params), decoupled(options)) {}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions options) : Adam(std::move(groups), decoupled(options)) {}

std::vector<std::string> Adam::state_keys(size_t group) const {
  if (groups_.at(group).amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"exp_avg", "exp_avg_sq"};
}

GroupOptions Adam::group_options(size_t g) const {
  return detail::to_group_options(groups_.at(g), table(defaults_.decoupled_weight_decay));
}

void Adam::append_group_options(const GroupOptions& overrides, const std::string& where) {
  AdamOptions o = detail::apply(defaults_, overrides, table(defaults_.decoupled_weight_decay), where);
  check(o, where);
  groups_.push_back(o);
}

void Adam::change_group_options(size_t g, const GroupOptions& changes, const std::string& where, bool checked) {
  AdamOptions o = detail::apply(groups_.at(g), changes, table(defaults_.decoupled_weight_decay), where);
  if (checked) check(o, where);
  groups_[g] = o;
}

void Adam::update(size_t index, Tensor& p, std::map<std::string, Tensor>& st) {
  const AdamOptions& o = groups_[group_of(index)];
  const double t = static_cast<double>(param_step(index));
  const double bc1 = 1.0 - std::pow(o.beta1, t), bc2 = 1.0 - std::pow(o.beta2, t);
  Tensor grad = p.grad().dtype() == p.dtype() ? p.grad() : p.grad().to(p.dtype());
  if (o.maximize) grad = neg(grad);
  if (!st.count("exp_avg")) {
    st["exp_avg"] = zeros_like(p);
    st["exp_avg_sq"] = zeros_like(p);
  }
  if (o.amsgrad && !st.count("max_exp_avg_sq")) st["max_exp_avg_sq"] = zeros_like(p);
  Tensor& m = st["exp_avg"];
  Tensor& v = st["exp_avg_sq"];
  // One pass over contiguous float32 tensors (FSDP's flat shards); the same bits as below.
  if (!o.amsgrad &&
      ops::try_fused_adam_step_(p, grad, m, v,
                                {.lr = o.lr, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps,
                                 .weight_decay = o.weight_decay, .decoupled_weight_decay = o.decoupled_weight_decay,
                                 .bias_correction1 = bc1, .bias_correction2 = bc2}))
    return;
  if (o.weight_decay != 0) {
    if (o.decoupled_weight_decay) mul_(p, 1.0 - o.lr * o.weight_decay);
    else grad = add(grad, p, o.weight_decay);
  }
  mul_(m, o.beta1);
  add_(m, grad, 1.0 - o.beta1);
  mul_(v, o.beta2);
  add_(v, mul(grad, grad), 1.0 - o.beta2);
  Tensor second = v;
  if (o.amsgrad) {
    Tensor& vmax = st["max_exp_avg_sq"];
    vmax.copy_(maximum(vmax, v));
    second = vmax;
  }
  Tensor denom = add(div(sqrt(second), std::sqrt(bc2)), o.eps);
  add_(p, div(m, denom), -o.lr / bc1);
}

}  // namespace strider::optim
