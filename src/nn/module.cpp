#include "strider/nn/module.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "strider/autograd/functions.h"
#include "strider/autograd/grad_mode.h"
#include "strider/nn/deferred_init.h"
#include "strider/nn/state_dict.h"

namespace strider::nn {
namespace {

void check_name(const std::string& name, const std::string& type) {
  STRIDER_CHECK(!name.empty() && name.find('.') == std::string::npos, "Module::register",
                "invalid name '", name, "' in ", type, ": names must be non-empty and contain no '.'");
}

template <class V>
auto find(V& v, const std::string& name) {
  return std::find_if(v.begin(), v.end(), [&](const auto& p) { return p.first == name; });
}

}  // namespace

Tensor Module::forward(const Tensor&) {
  STRIDER_CHECK(false, type_name_.c_str(),
                "was called with one Tensor, but overrides neither forward(const Tensor&) nor forward_args(); a "
                "forward with other parameters (forward(x, mask)) is reached through forward_args: override it "
                "with nn::bind_forward (nn/forward_binding.h)");
  return Tensor();
}

Value Module::forward_args(const Args& args) {
  STRIDER_CHECK(args.size() == 1 && args.keywords().empty() && args[0].is_tensor(), type_name_.c_str(),
                "takes one Tensor (it overrides forward(const Tensor&) only), but was called with ", args.describe(),
                "; to take other arguments, override forward_args with nn::bind_forward (nn/forward_binding.h)");
  return forward(args[0].tensor());
}

Value Module::call(Args args) {
  if (owner_) return owner_->call(*this, std::move(args), [this](Args a) { return call_from(0, std::move(a)); });
  return call_from(0, std::move(args));
}

Value Module::call_from(size_t i, Args args) {
  if (i < call_wrappers_.size()) {
    // Copied: a wrapper may keep `proceed` past this call (checkpointing replays it in backward).
    CallWrapper fn = call_wrappers_[i].fn;
    return fn(*this, std::move(args), [this, i](Args a) { return call_from(i + 1, std::move(a)); });
  }
  for (auto& [id, hook] : pre_hooks_)
    if (auto r = hook(*this, args)) args = std::move(*r);
  Value out;
  try {
    out = forward_args(args);
  } catch (const Error& e) {
    // Prefix the module chain, outermost first: "in ResNet > Sequential > BasicBlock > Conv2d
    // (weight [64, 64, 3, 3]): [conv2d] ...".
    std::string what = e.what();
    std::string own = type_name_;
    if (has_param("weight")) own += " (weight " + detail::str(param("weight").sizes()) + ")";
    if (what.rfind("in ", 0) == 0) throw Error("in " + type_name_ + " > " + what.substr(3));
    throw Error("in " + own + ": " + what);
  }
  for (auto& [id, hook] : post_hooks_)
    if (auto r = hook(*this, args, out)) out = std::move(*r);
  return out;
}

ModuleOutput Module::operator()(const Tensor& input) { return ModuleOutput(call(Args{input})); }

Tensor& Module::register_parameter(const std::string& name, Tensor value, bool requires_grad) {
  check_name(name, type_name_);
  STRIDER_CHECK(find(buffers_, name) == buffers_.end(), type_name_.c_str(), "cannot register parameter '", name,
                "': a buffer of that name is already registered");
  STRIDER_CHECK(find(params_, name) == params_.end(), type_name_.c_str(), "parameter '", name,
                "' is already registered");
  if (auto stand_in = deferred::defer_parameter(value)) value = *stand_in;  // under a DeferredInit
  if (value.defined()) {
    value = value.detach();
    if (requires_grad) value.requires_grad_(true);
  }
  params_.emplace_back(name, value);
  return params_.back().second;
}

Tensor& Module::register_buffer(const std::string& name, Tensor value, bool persistent) {
  check_name(name, type_name_);
  STRIDER_CHECK(find(params_, name) == params_.end(), type_name_.c_str(), "cannot register buffer '", name,
                "': a parameter of that name is already registered");
  STRIDER_CHECK(find(buffers_, name) == buffers_.end(), type_name_.c_str(), "buffer '", name,
                "' is already registered");
  buffers_.emplace_back(name, value.defined() ? value.detach() : value);
  if (!persistent) non_persistent_buffers_.insert(name);
  return buffers_.back().second;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_name(name, type_name_);
  STRIDER_CHECK(module != nullptr, type_name_.c_str(), "child '", name, "' is null");
  STRIDER_CHECK(find(children_, name) == children_.end(), type_name_.c_str(), "child '", name, "' is already registered");
  children_.emplace_back(name, std::move(module));
}

void Module::register_wrapped_module(std::shared_ptr<Module> module) {
  STRIDER_CHECK(module != nullptr, type_name_.c_str(), "wrapped module is null");
  STRIDER_CHECK(children_.empty() && params_.empty() && buffers_.empty(), type_name_.c_str(),
                "a wrapper holds exactly one module and nothing else");
  children_.emplace_back("", std::move(module));
}

Tensor& Module::param(const std::string& name) {
  auto it = find(params_, name);
  STRIDER_CHECK(it != params_.end(), type_name_.c_str(), "no parameter named '", name, "'");
  return it->second;
}
const Tensor& Module::param(const std::string& name) const { return const_cast<Module*>(this)->param(name); }
bool Module::has_param(const std::string& name) const { return find(params_, name) != params_.end(); }

Tensor& Module::buffer(const std::string& name) {
  auto it = find(buffers_, name);
  STRIDER_CHECK(it != buffers_.end(), type_name_.c_str(), "no buffer named '", name, "'");
  return it->second;
}

void Module::set_param(const std::string& name, Tensor value) { param(name) = std::move(value); }
void Module::set_buffer(const std::string& name, Tensor value) { buffer(name) = std::move(value); }

void Module::collect_params(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out, bool recurse) const {
  for (const auto& [n, t] : params_)
    if (t.defined()) out.emplace_back(prefix + n, t);
  if (recurse)
    for (const auto& [n, c] : children_) c->collect_params(n.empty() ? prefix : prefix + n + ".", out, true);
}

void Module::collect_buffers(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out, bool recurse,
                             bool persistent_only) const {
  for (const auto& [n, t] : buffers_)
    if (t.defined() && !(persistent_only && non_persistent_buffers_.count(n))) out.emplace_back(prefix + n, t);
  if (recurse)
    for (const auto& [n, c] : children_)
      c->collect_buffers(n.empty() ? prefix : prefix + n + ".", out, true, persistent_only);
}

namespace {

std::vector<std::pair<std::string, Tensor>> without_duplicates(std::vector<std::pair<std::string, Tensor>> named) {
  std::set<const TensorImpl*> seen;
  std::erase_if(named, [&](const auto& entry) { return !seen.insert(entry.second.impl()).second; });
  return named;
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse, bool remove_duplicate) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect_params("", out, recurse);
  return remove_duplicate ? without_duplicates(std::move(out)) : out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse, bool remove_duplicate) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect_buffers("", out, recurse, false);
  return remove_duplicate ? without_duplicates(std::move(out)) : out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_persistent_buffers(bool remove_duplicate) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect_buffers("", out, true, true);
  return remove_duplicate ? without_duplicates(std::move(out)) : out;
}

// A module registered twice (nn.Sequential(l, l)) is one module: children, named_modules and
// apply visit it once, under its first name, as PyTorch's memo sets do.
std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  std::set<const Module*> seen;
  for (auto& [n, c] : children_)
    if (seen.insert(c.get()).second) out.push_back(c);
  return out;
}

namespace {

using NamedModules = std::vector<std::pair<std::string, std::shared_ptr<Module>>>;

void collect_modules(const std::shared_ptr<Module>& m, const std::string& prefix, NamedModules& out,
                     std::set<const Module*>& seen) {
  if (!seen.insert(m.get()).second) return;
  out.emplace_back(prefix, m);
  for (auto& [n, c] : m->named_children())
    collect_modules(c, n.empty() ? prefix : prefix.empty() ? n : prefix + "." + n, out, seen);
}

void apply_once(Module& m, const std::function<void(Module&)>& fn, std::set<const Module*>& seen) {
  if (!seen.insert(&m).second) return;
  fn(m);
  for (auto& [n, c] : m.named_children()) apply_once(*c, fn, seen);
}

}  // namespace

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules(const std::string& prefix) {
  // A module built on the stack (nn::Sequential s{...}) has no owner to share: it lists itself
  // through a pointer that does not own it, valid while it lives.
  std::shared_ptr<Module> self = weak_from_this().lock();
  if (!self) self = std::shared_ptr<Module>(std::shared_ptr<Module>(), this);
  NamedModules out;
  std::set<const Module*> seen;
  collect_modules(self, prefix, out, seen);
  return out;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  std::set<const Module*> seen;
  apply_once(*this, fn, seen);
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (auto& [name, t] : named_parameters()) n += t.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, c] : children_) c->train(on);
}

template <class F>
void Module::apply_to_tensors(F f) {
  autograd::NoGradGuard no_grad;
  // One conversion per tensor however many slots hold it (a tied parameter, a module registered
  // twice), so tied tensors stay tied, deferred stand-ins included.
  std::map<const TensorImpl*, Tensor> converted;
  std::function<Tensor(const std::string&, const Tensor&)> once = [&](const std::string& n, const Tensor& t) {
    auto [it, fresh] = converted.try_emplace(t.impl());
    if (fresh) it->second = f(n, t);
    return it->second;
  };
  convert_tensors(once);
}

void Module::convert_tensors(const std::function<Tensor(const std::string&, const Tensor&)>& f) {
  for (auto& [n, t] : params_) {
    if (!t.defined()) continue;
    const bool rg = t.requires_grad();
    Tensor converted = f(n, t);
    if (converted.is_same(t)) continue;
    if (is_deferred(t)) {  // a stand-in (new, made under no-grad): every slot that held t takes it
      t = converted;
      if (rg) t.requires_grad_(true);
      continue;
    }
    // The parameter keeps its identity, as PyTorch's module.to does (param.data = new): an
    // optimizer built earlier and a module sharing it see the converted tensor.
    Tensor grad = t.grad();
    if (grad.defined()) t.set_grad(Tensor());
    t.set_data(converted);
    if (grad.defined()) t.set_grad(f(n, grad).detach());
  }
  for (auto& [n, t] : buffers_)
    if (t.defined()) t = f(n, t).detach();
  for (auto& [n, c] : children_) c->convert_tensors(f);
}

void Module::to(ScalarType dtype) {
  STRIDER_CHECK(is_floating_point(dtype), (type_name_ + ".to").c_str(), "takes floating-point dtypes only, got ", dtype,
                " (PyTorch: 'nn.Module.to only accepts floating point or complex dtypes'); convert tensors one by one");
  apply([](Module& m) {
    if (m.owner_) m.owner_->check_conversion(m, "to(dtype)");
  });
  apply_to_tensors([&](const std::string&, const Tensor& t) {
    if (!is_floating_point(t.dtype())) return t;
    return is_deferred(t) ? deferred::retarget(t, dtype, std::nullopt) : t.to(dtype);
  });
}

void Module::to(MemoryFormat fmt) {
  apply([](Module& m) {
    if (m.owner_) m.owner_->check_conversion(m, "to(memory_format)");
  });
  apply_to_tensors([&](const std::string& name, const Tensor& t) {
    if (t.dim() != 4 && t.dim() != 5) return t;
    if (is_deferred(t)) return deferred::retarget(t, t.dtype(), fmt);
    try {
      return t.to(fmt);
    } catch (const Error& e) {
      STRIDER_CHECK(false, (type_name_ + ".to").c_str(), "cannot move '", name, "' of shape ", t.sizes(),
                    " to ", fmt, ": ", e.what());
      return t;
    }
  });
}

void Module::requires_grad_(bool requires_grad) {
  auto params = named_parameters();
  if (std::all_of(params.begin(), params.end(), [&](const auto& p) { return p.second.requires_grad() == requires_grad; }))
    return;  // nothing changes (allowed under a wrapper too, as in PyTorch)
  apply([](Module& m) {
    if (m.owner_) m.owner_->check_conversion(m, "requires_grad_");
  });
  for (auto& [n, t] : params) t.requires_grad_(requires_grad);
}

void Module::zero_grad() {
  for (auto& [n, t] : named_parameters()) t.set_grad(Tensor());
}

std::map<std::string, Tensor> Module::state_dict() const {
  if (owner_) return owner_->state_dict(*this);
  std::map<std::string, Tensor> out;
  // Every name, a shared tensor under each (PyTorch's state_dict).
  for (auto& [n, t] : named_parameters(true, false)) out[n] = t.detach();
  for (auto& [n, t] : named_persistent_buffers(false)) out[n] = t.detach();
  return out;
}

IncompatibleKeys Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict) {
  if (owner_) return owner_->load_state_dict(*this, state, strict);
  autograd::NoGradGuard no_grad;
  const StateDictOrigin origin = state_dict_origin(state);
  STRIDER_CHECK(origin.kind == StateDictKind::Full, "load_state_dict", type_name_, " takes a full state dict, but this is ",
                describe(origin), " from FullyShardedDataParallel; load it into the FSDP model under the same "
                "state-dict type, or save a full one there (its default state_dict())");
  // Everything is checked before anything is copied: a failed load leaves the module as it was.
  std::set<std::string> seen;
  std::vector<std::string> missing, unexpected;
  std::vector<std::pair<Tensor, Tensor>> copies;  // (destination, source)
  auto plan = [&](const std::string& name, const Tensor& dst, const char* kind) {
    auto it = state.find(name);
    if (it == state.end()) {
      missing.push_back(name);
      return;
    }
    seen.insert(name);
    STRIDER_CHECK(it->second.defined(), "load_state_dict", "the state dict's '", name, "' is an undefined tensor");
    STRIDER_CHECK(it->second.sizes() == dst.sizes(), "load_state_dict", "size mismatch for '", name,
                  "': copying a tensor of shape ", it->second.sizes(), " into a ", kind, " of shape ", dst.sizes());
    copies.emplace_back(dst, it->second);
  };
  for (auto& [n, t] : named_parameters(true, false)) plan(n, t, "parameter");
  for (auto& [n, t] : named_persistent_buffers(false)) plan(n, t, "buffer");
  for (auto& [n, t] : state)
    if (!seen.count(n)) unexpected.push_back(n);
  IncompatibleKeys keys = report_incompatible_keys("load_state_dict", type_name_, std::move(missing),
                                                   std::move(unexpected), strict);
  for (auto& [dst, src] : copies) dst.copy_(src);
  return keys;
}

int Module::register_forward_pre_hook(ForwardPreHook hook) {
  pre_hooks_.emplace_back(next_hook_, std::move(hook));
  return next_hook_++;
}

int Module::register_forward_hook(ForwardHook hook) {
  post_hooks_.emplace_back(next_hook_, std::move(hook));
  return next_hook_++;
}

int Module::register_call_wrapper(const std::string& kind, CallWrapper wrapper) {
  STRIDER_CHECK(wrapper != nullptr, type_name_.c_str(), "call wrapper '", kind, "' is empty");
  call_wrappers_.push_back({next_hook_, kind, std::move(wrapper)});
  return next_hook_++;
}

bool Module::has_call_wrapper(const std::string& kind) const {
  return std::any_of(call_wrappers_.begin(), call_wrappers_.end(), [&](const NamedWrapper& w) { return w.kind == kind; });
}

void Module::remove_hook(int handle) {
  std::erase_if(pre_hooks_, [&](auto& p) { return p.first == handle; });
  std::erase_if(post_hooks_, [&](auto& p) { return p.first == handle; });
  std::erase_if(call_wrappers_, [&](const NamedWrapper& w) { return w.handle == handle; });
}

}  // namespace strider::nn
