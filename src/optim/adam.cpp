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
  if (o.state_dtype) {
    STRIDER_CHECK(*o.state_dtype == kFloat || *o.state_dtype == kBFloat16, op, where, ": state_dtype ",
                  *o.state_dtype, " is not supported; use float32 or bfloat16 (or leave it unset: the parameter's)");
    STRIDER_CHECK(!(*o.state_dtype == kBFloat16 && o.amsgrad), op, where,
                  ": state_dtype bfloat16 does not keep amsgrad's max_exp_avg_sq; turn amsgrad off or keep the "
                  "state in the parameter's dtype");
  }
}

// The two moments' rounding streams for one parameter at one step: its name and step hashed
// (FNV-1a, then a full-avalanche mix), so every run and every world size draws the same bits.
std::pair<uint32_t, uint32_t> rounding_keys(const std::string& name, int64_t step) {
  uint32_t h = 2166136261u;
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  auto mix = [](uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return static_cast<uint32_t>(x);
  };
  const uint64_t base = (static_cast<uint64_t>(h) << 32) ^ static_cast<uint64_t>(step);
  return {mix(base * 2 + 1), mix(base * 2 + 2)};
}

AdamOptions decoupled(const AdamWOptions& w) {
  return {.lr = w.lr, .beta1 = w.beta1, .beta2 = w.beta2, .eps = w.eps, .weight_decay = w.weight_decay,
          .amsgrad = w.amsgrad, .maximize = w.maximize, .decoupled_weight_decay = true, .state_dtype = w.state_dtype};
}

}  // namespace

Adam::Adam(NamedParameters params, AdamOptions options)
    : Adam(std::vector<ParamGroup>{{std::move(params), {}}}, options) {}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions options) : defaults_(options) {
  add_param_groups(std::move(groups));
  for (const auto& [pname, p] : params_) check_state_dtype(pname, p);
}

// A set state dtype is for float32 parameters (the kernel's); others keep PyTorch's (their own).
void Adam::check_state_dtype(const std::string& name, const Tensor& p) const {
  STRIDER_CHECK(!defaults_.state_dtype || p.dtype() == kFloat, display_name(), ": state_dtype ", *defaults_.state_dtype,
                " is for float32 parameters, but '", name, "' is ", p.dtype(), "; leave state_dtype unset for ",
                p.dtype(), " parameters (their state is then ", p.dtype(), ")");
}

ScalarType Adam::state_dtype(const Tensor& param) const { return defaults_.state_dtype.value_or(param.dtype()); }

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
  check_state_dtype(params_[index].first, p);  // a group added later, too
  if (defaults_.state_dtype == kBFloat16) {
    STRIDER_CHECK(!o.amsgrad, display_name(), ": '", params_[index].first, "' is in a group with amsgrad, which "
                  "state_dtype bfloat16 does not keep; turn amsgrad off or keep the state in float32");
    return update_bfloat16_state(index, p, grad, st, o, bc1, bc2);
  }
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

// bfloat16 moments: one fused pass over contiguous tensors (a channels-last parameter steps in
// a contiguous copy, copied back), elements counted from the whole parameter's start.
void Adam::update_bfloat16_state(size_t index, Tensor& p, const Tensor& grad, std::map<std::string, Tensor>& st,
                                 const AdamOptions& o, double bc1, double bc2) {
  if (!st.count("exp_avg")) {
    st["exp_avg"] = zeros_like(p, kBFloat16, MemoryFormat::Contiguous);
    st["exp_avg_sq"] = zeros_like(p, kBFloat16, MemoryFormat::Contiguous);
  }
  Tensor& m = st["exp_avg"];
  Tensor& v = st["exp_avg_sq"];
  // Loaded state may come in another layout: step it in contiguous copies too.
  const Tensor pc = p.contiguous(), gc = grad.contiguous(), mc = m.contiguous(), vc = v.contiguous();
  const auto [key_m, key_v] = rounding_keys(params_[index].first, param_step(index));
  const bool fused = ops::try_fused_adam_step_(
      pc, gc, mc, vc,
      {.lr = o.lr, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps, .weight_decay = o.weight_decay,
       .decoupled_weight_decay = o.decoupled_weight_decay, .bias_correction1 = bc1, .bias_correction2 = bc2},
      {.exp_avg = key_m, .exp_avg_sq = key_v, .first_element = element_offset(index)});
  STRIDER_CHECK(fused, display_name(), ": cannot step '", params_[index].first, "' with bfloat16 state (",
                ops::fused_adam_step_rejects(pc, gc, mc, vc), ")");
  for (auto [dst, src] : {std::pair{&p, &pc}, {&m, &mc}, {&v, &vc}})
    if (!dst->is_same(*src)) dst->copy_(*src);
}

}  // namespace strider::optim
