#include "strider/optim/optimizer.h"

#include <algorithm>
#include <cmath>

#include "strider/autograd/functions.h"
#include "strider/autograd/grad_mode.h"
#include "strider/autograd/node.h"
#include "strider/ops/factory.h"

namespace strider::optim {
namespace {

bool all_finite(const Tensor& t) {
  autograd::NoGradGuard g;
  return std::isfinite(sum(abs(t.to(kDouble))).item<double>());  // any NaN or infinity survives the sum
}

std::string group_name(size_t g) { return "param group " + std::to_string(g); }

std::string joined(const std::vector<std::string>& keys) {
  std::string s;
  for (const std::string& k : keys) s += (s.empty() ? "" : ", ") + k;
  return s.empty() ? "none" : s;
}

}  // namespace

void Optimizer::add_param_groups(std::vector<ParamGroup> groups) {
  for (ParamGroup& g : groups) add_param_group(std::move(g));
  STRIDER_CHECK(!params_.empty(), display_name(), "got an empty parameter list; pass the parameters to optimize "
                "(model->named_parameters()), or param groups that hold some");
}

void Optimizer::add_param_group(ParamGroup group) {
  const size_t g = group_params_.size();
  const std::string where = group_name(g);
  std::map<std::string, size_t> group_by_name;
  std::map<const TensorImpl*, std::string> name_by_tensor;
  for (size_t i = 0; i < params_.size(); ++i) {
    group_by_name[params_[i].first] = group_of_[i];
    name_by_tensor[params_[i].second.impl()] = params_[i].first;
  }
  for (const auto& [n, p] : group.params) {
    STRIDER_CHECK(p.defined() && is_floating_point(p.dtype()), display_name(), "parameter '", n, "' of ", where,
                  " must be a defined floating-point tensor");
    // A tensor computed from others never receives a .grad(): stepping it would silently do nothing.
    STRIDER_CHECK(p.is_leaf(), display_name(), "parameter '", n, "' of ", where, " is not a leaf tensor (it has ",
                  p.grad_fn() ? p.grad_fn()->name() : std::string("a grad_fn"),
                  "), so backward never gives it a gradient; pass the leaf it was computed from, or detach() it "
                  "and set requires_grad_() (PyTorch: can't optimize a non-leaf Tensor)");
    auto named = group_by_name.find(n);
    STRIDER_CHECK(named == group_by_name.end(), display_name(), "parameter '", n, "' of ", where, " is already in ",
                  named->second == g ? std::string("that group") : group_name(named->second),
                  "; state is kept by name, so each parameter must appear once, in one group");
    auto same = name_by_tensor.find(p.impl());
    STRIDER_CHECK(same == name_by_tensor.end(), display_name(), "parameter '", n, "' of ", where,
                  " is the same tensor as parameter '", same->second,
                  "'; each parameter must appear once, in one group (PyTorch: some parameters appear in more than "
                  "one parameter group)");
    group_by_name[n] = g;
    name_by_tensor[p.impl()] = n;
  }
  append_group_options(group.options, where);  // checks the options before anything changes
  group_params_.emplace_back();
  initial_lr_.emplace_back();
  for (auto& [n, p] : group.params) {
    group_params_.back().push_back(params_.size());
    group_of_.push_back(g);
    param_steps_.push_back(0);
    params_.emplace_back(n, p);
  }
}

size_t Optimizer::group_of(size_t index) const {
  STRIDER_CHECK(index < params_.size(), "optimizer", "parameter index ", index, " is out of range for ",
                params_.size(), " parameters");
  return group_of_[index];
}

ParamGroup Optimizer::param_group(size_t g) const {
  STRIDER_CHECK(g < group_params_.size(), display_name(), "there is no param group ", g, "; the optimizer has ",
                group_params_.size());
  ParamGroup out{.params = {}, .options = group_options(g)};
  for (size_t i : group_params_[g]) out.params.push_back(params_[i]);
  return out;
}

std::vector<ParamGroup> Optimizer::param_groups() const {
  std::vector<ParamGroup> out;
  for (size_t g = 0; g < group_params_.size(); ++g) out.push_back(param_group(g));
  return out;
}

void Optimizer::set_group_options(size_t g, const GroupOptions& changes) {
  STRIDER_CHECK(g < group_params_.size(), display_name(), "there is no param group ", g, "; the optimizer has ",
                group_params_.size());
  change_group_options(g, changes, group_name(g), /*check=*/true);
}

void Optimizer::assign_group_options(size_t g, const GroupOptions& changes) {
  STRIDER_CHECK(g < group_params_.size(), display_name(), "there is no param group ", g, "; the optimizer has ",
                group_params_.size());
  change_group_options(g, changes, group_name(g), /*check=*/false);
}

double Optimizer::lr(size_t group) const { return *param_group_options(group).lr; }

void Optimizer::set_lr(double lr) {
  for (size_t g = 0; g < group_params_.size(); ++g) set_lr(g, lr);
}

void Optimizer::set_lr(size_t group, double lr) { assign_group_options(group, GroupOptions{.lr = lr}); }

std::optional<double> Optimizer::initial_lr(size_t group) const { return initial_lr_.at(group); }

void Optimizer::set_initial_lr(size_t group, double lr) { initial_lr_.at(group) = lr; }

GroupOptions Optimizer::param_group_options(size_t g) const {
  STRIDER_CHECK(g < group_params_.size(), display_name(), "there is no param group ", g, "; the optimizer has ",
                group_params_.size());
  return group_options(g);
}

std::vector<std::string> Optimizer::state_keys() const {
  std::vector<std::string> all;
  for (size_t g = 0; g < group_params_.size(); ++g)
    for (const std::string& k : state_keys(g))
      if (std::find(all.begin(), all.end(), k) == all.end()) all.push_back(k);
  return all;
}

void Optimizer::zero_grad() {
  for (auto& [n, p] : params_) p.set_grad(Tensor());
}

void Optimizer::set_params(NamedParameters params) {
  STRIDER_CHECK(params.size() == params_.size(), display_name(), "set_params got ", params.size(),
                " parameters for ", params_.size(), "; it replaces the tensors of the same parameters");
  for (size_t i = 0; i < params.size(); ++i)
    STRIDER_CHECK(params[i].first == params_[i].first, display_name(), "set_params got '", params[i].first,
                  "' at position ", i, " where the optimizer has '", params_[i].first, "'");
  params_ = std::move(params);
}

void Optimizer::check_params_alive() const {
  // A parameter whose values moved elsewhere (FSDP's wrap moves them into shards) never gets a
  // gradient again; stepping it would silently train nothing.
  for (const auto& [name, p] : params_) {
    if (const std::string* why = p.storage()->retired_reason())
      STRIDER_CHECK(false, "optimizer", "parameter '", name, "' can no longer be stepped: ", *why);
    if (std::string why = p.storage()->step_refusal(); !why.empty())
      STRIDER_CHECK(false, "optimizer", "parameter '", name, "' cannot be stepped now: ", why);
  }
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
  follow_parameter(name, p, state_[name]);
  ++param_steps_[index];  // PyTorch counts before the update (Adam's bias correction uses it)
  try {
    update(index, p, state_[name]);
  } catch (...) {
    --param_steps_[index];
    throw;
  }
  for (auto& [handle, hooks] : param_hooks_)
    if (hooks.after) hooks.after(index);
}

void Optimizer::follow_parameter(const std::string& name, const Tensor& p, std::map<std::string, Tensor>& state) const {
  const ScalarType want = state_dtype(p);
  for (auto& [key, t] : state) {
    // A parameter whose tensor was replaced by one of another shape is not the one this state
    // belongs to; there is no honest conversion.
    STRIDER_CHECK(t.sizes() == p.sizes(), display_name(), "state '", name, ".", key, "' has shape ", t.sizes(),
                  " but the parameter is now ", p.sizes(), "; it was replaced by a tensor of another shape after "
                  "the optimizer stepped it. Build a new optimizer for the new parameters (or drop this one's "
                  "state with load_state)");
    if (t.dtype() == want) continue;
    // The module was converted (Module::to(kDouble)) after the optimizer was built: the state
    // follows, as PyTorch's load_state_dict casts state to the parameter's dtype.
    Tensor converted = empty_like(p, want, want == p.dtype() ? MemoryFormat::Preserve : MemoryFormat::Contiguous);
    converted.copy_(t);
    t = converted;
  }
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

std::map<std::string, int64_t> Optimizer::param_steps_differing() const {
  std::map<std::string, int64_t> out;
  for (size_t i = 0; i < params_.size(); ++i)
    if (param_steps_[i] != steps_) out[params_[i].first] = param_steps_[i];
  return out;
}

void Optimizer::load_state(const OptimizerState& state, int64_t step_count, const std::string& what,
                           const std::map<std::string, int64_t>& param_steps) {
  autograd::NoGradGuard no_grad;
  STRIDER_CHECK(step_count >= 0, "load_state", what, ": step count ", step_count, " is negative");
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < params_.size(); ++i) index_of[params_[i].first] = i;
  for (const auto& [pname, s] : param_steps) {
    STRIDER_CHECK(index_of.count(pname), "load_state", what, " has a step count for '", pname,
                  "', which is not a parameter of this optimizer");
    STRIDER_CHECK(s >= 0, "load_state", what, ": parameter '", pname, "' has the negative step count ", s);
  }
  OptimizerState fresh;
  for (auto& [pname, entries] : state) {
    auto it = index_of.find(pname);
    STRIDER_CHECK(it != index_of.end(), "load_state", what, " has ", name(), " state for '", pname,
                  "', which is not a parameter of this optimizer");
    const Tensor& p = params_[it->second].second;
    const std::vector<std::string> keys = state_keys(group_of_[it->second]);
    for (auto& [key, v] : entries)
      STRIDER_CHECK(std::find(keys.begin(), keys.end(), key) != keys.end(), "load_state", what, ": '", pname, ".",
                    key, "' is not ", name(), " state for this parameter (its ", group_name(group_of_[it->second]),
                    " keeps ", joined(keys), ")");
    for (const std::string& key : keys) {
      auto e = entries.find(key);
      STRIDER_CHECK(e != entries.end(), "load_state", what, ": parameter '", pname, "' lacks its ", name(), " state '",
                    key, "'");
      const Tensor& v = e->second;
      const ScalarType want = state_dtype(p);
      STRIDER_CHECK(v.defined() && v.sizes() == p.sizes() && v.dtype() == want, "load_state", what, ": state '",
                    pname, ".", key, "' is ", v.defined() ? v.sizes() : IntArrayRef(), " ",
                    v.defined() ? to_string(v.dtype()) : "undefined", " but the parameter is ", p.sizes(), " ",
                    p.dtype(), want == p.dtype() ? std::string() : " with " + std::string(to_string(want)) + " state",
                    want == p.dtype() ? "" : " (the optimizer's state_dtype: load with the setting it was saved with)");
      // State of its own dtype is stepped contiguous (the fused kernel's layout), whatever p's.
      Tensor copy = empty_like(p, want, want == p.dtype() ? MemoryFormat::Preserve : MemoryFormat::Contiguous);
      copy.copy_(v);
      STRIDER_CHECK(all_finite(copy), "load_state", what, ": state '", pname, ".", key,
                    "' holds NaN or infinite values");
      fresh[pname][key] = copy;
    }
  }
  std::vector<int64_t> steps(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& [pname, p] = params_[i];
    const bool has = fresh.count(pname) > 0;
    auto listed = param_steps.find(pname);
    steps[i] = listed != param_steps.end() ? listed->second : (has || p.requires_grad() ? step_count : 0);
    if (state_keys(group_of_[i]).empty()) continue;
    STRIDER_CHECK(steps[i] == 0 || has, "load_state", what, " has no ", name(), " state for parameter '", pname,
                  "' after ", steps[i], " steps");
    STRIDER_CHECK(steps[i] > 0 || !has, "load_state", what, " has ", name(), " state for parameter '", pname,
                  "', whose step count is 0; state exists only once a parameter has stepped");
  }
  state_ = std::move(fresh);
  steps_ = step_count;
  param_steps_ = std::move(steps);
}

void Optimizer::restore(Snapshot s) {
  STRIDER_INTERNAL_ASSERT(s.param_steps.size() == params_.size(), "a snapshot of ", s.param_steps.size(),
                          " parameters restored into an optimizer of ", params_.size());
  state_ = std::move(s.state);
  steps_ = s.steps;
  param_steps_ = std::move(s.param_steps);
}

OptimizerStateDict Optimizer::state_dict() const {
  OptimizerStateDict d;
  for (size_t g = 0; g < group_params_.size(); ++g) {
    ParamGroupState pg{.params = {}, .options = group_options(g), .initial_lr = initial_lr_[g]};
    for (size_t i : group_params_[g]) pg.params.push_back(static_cast<int64_t>(i));
    d.param_groups.push_back(std::move(pg));
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    std::map<std::string, Tensor> entry;
    if (auto it = state_.find(params_[i].first); it != state_.end()) entry = it->second;  // the live tensors, as PyTorch
    if (keeps_step_state() && param_steps_[i] > 0)
      entry["step"] = full({}, static_cast<double>(param_steps_[i]), kFloat);  // PyTorch 1.13: a 0-d float32 tensor
    if (!entry.empty()) d.state[static_cast<int64_t>(i)] = std::move(entry);
  }
  return d;
}

void Optimizer::load_state_dict(const OptimizerStateDict& dict, const std::string& what) {
  autograd::NoGradGuard no_grad;
  const char* op = "load_state_dict";
  STRIDER_CHECK(dict.param_groups.size() == group_params_.size(), op, what, " has ", dict.param_groups.size(),
                " param groups but the optimizer has ", group_params_.size(),
                "; build the optimizer with the groups the state was saved from");
  std::map<int64_t, size_t> ours;  // the dict's parameter index -> ours
  for (size_t g = 0; g < group_params_.size(); ++g) {
    const auto& listed = dict.param_groups[g].params;
    STRIDER_CHECK(listed.size() == group_params_[g].size(), op, what, ": ", group_name(g), " has ", listed.size(),
                  " parameters there and ", group_params_[g].size(), " here; the groups must hold the same "
                  "parameters in the same order");
    for (size_t k = 0; k < listed.size(); ++k)
      STRIDER_CHECK(ours.emplace(listed[k], group_params_[g][k]).second, op, what, ": parameter index ", listed[k],
                    " is listed twice");
  }
  OptimizerState named;
  std::map<std::string, int64_t> steps;
  for (const auto& [index, entries] : dict.state) {
    auto it = ours.find(index);
    STRIDER_CHECK(it != ours.end(), op, what, " has state for parameter index ", index,
                  ", which none of its param groups lists");
    const auto& [pname, p] = params_[it->second];
    for (const auto& [key, t] : entries) {
      STRIDER_CHECK(t.defined(), op, what, ": state[", index, "][\"", key, "\"] is undefined");
      if (key == "step") {
        STRIDER_CHECK(t.numel() == 1, op, what, ": state[", index, "][\"step\"] has shape ", t.sizes(),
                      "; a step count is one number");
        const double s = t.to(kDouble).reshape({}).item<double>();
        STRIDER_CHECK(s >= 0 && std::floor(s) == s, op, what, ": state[", index, "][\"step\"] is ", s,
                      ", not a step count");
        steps[pname] = static_cast<int64_t>(s);
        continue;
      }
      const ScalarType want = state_dtype(p);  // PyTorch casts state to the parameter's dtype
      named[pname][key] = t.dtype() == want ? t : t.to(want);
    }
  }
  int64_t step_count = 0;
  if (keeps_step_state()) {
    for (const auto& [pname, p] : params_) steps.emplace(pname, 0);  // no entry: it has not stepped
    for (const auto& [pname, s] : steps) step_count = std::max(step_count, s);
  } else {
    // Without step state (SGD) a parameter with state has stepped at least once; the optimizer's
    // own count is kept.
    step_count = std::max(steps_, named.empty() ? int64_t{0} : int64_t{1});
    for (const auto& [pname, p] : params_) steps[pname] = named.count(pname) ? step_count : 0;
  }
  std::vector<GroupOptions> before;
  for (size_t g = 0; g < group_params_.size(); ++g) before.push_back(group_options(g));
  try {
    for (size_t g = 0; g < group_params_.size(); ++g)
      change_group_options(g, dict.param_groups[g].options, what + " " + group_name(g), /*check=*/true);
    load_state(named, step_count, what, steps);
  } catch (...) {
    for (size_t g = 0; g < group_params_.size(); ++g) change_group_options(g, before[g], group_name(g), /*check=*/false);
    throw;
  }
  for (size_t g = 0; g < group_params_.size(); ++g) initial_lr_[g] = dict.param_groups[g].initial_lr;
}

int64_t Optimizer::element_offset(size_t index) const {
  STRIDER_CHECK(index < params_.size(), display_name(), ": element_offset of parameter ", index, ", but it has ",
                params_.size());
  return index < element_offsets_.size() ? element_offsets_[index] : 0;
}

void Optimizer::set_element_offset(size_t index, int64_t offset) {
  STRIDER_CHECK(index < params_.size() && offset >= 0, display_name(), ": set_element_offset(", index, ", ", offset,
                ") needs a parameter index below ", params_.size(), " and an offset >= 0");
  if (element_offsets_.size() < params_.size()) element_offsets_.resize(params_.size(), 0);
  element_offsets_[index] = offset;
}

}  // namespace strider::optim
