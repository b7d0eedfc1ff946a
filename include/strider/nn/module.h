#pragma once
// Module: named parameters, buffers and children, train/eval, dtype and memory-format
// conversion, state dicts and forward hooks. Layers read their parameters from the registry on
// every call, so a wrapper (FSDP) can swap in gathered tensors by name.
//
// Forward comes in two forms. Single-tensor modules (layers, Sequential chains) override
// forward(const Tensor&) and are called as (*m)(x), giving a Tensor. Modules with other
// signatures (several inputs, keyword arguments, several outputs) override forward_args(Args),
// usually through bind_forward (nn/forward_binding.h), and are called as (*m)(a, b,
// nn::kw("mask", m)), giving a Value; called with one tensor, (*m)(x) gives a ModuleOutput,
// which is a Tensor and converts to the whole Value. Either way the call goes through call(),
// which runs the hooks, so wrappers (FSDP, DDP) see every module's inputs and outputs the same way.
#include <concepts>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "strider/core/tensor.h"
#include "strider/nn/state_dict.h"
#include "strider/nn/value.h"

namespace strider::nn {

class Module;

// A wrapper that took a module's parameters over (FSDP keeps one rank's shards of them between
// steps) answers for that module, and for every module inside it, when user code reaches them
// directly instead of through the wrapper, through a pointer it kept from before the wrap: each
// whole-module operation gives the right answer or an Error naming the wrapper and the fix,
// never one rank's rows as if they were the whole tensor.
class ModuleOwner {
 public:
  virtual ~ModuleOwner() = default;
  // A call of `m`: runs `proceed` when the owner has m's parameters in place (its own forward
  // is running), otherwise runs the call correctly some other way or throws.
  virtual Value call(Module& m, Args args, const std::function<Value(Args)>& proceed) = 0;
  virtual std::map<std::string, Tensor> state_dict(const Module& m) = 0;
  virtual IncompatibleKeys load_state_dict(Module& m, const std::map<std::string, Tensor>& state, bool strict) = 0;
  // Throws: `what` (to(dtype), to(format), requires_grad_) would change what the owner laid out.
  virtual void check_conversion(const Module& m, const std::string& what) = 0;
};

class Module : public std::enable_shared_from_this<Module> {
 public:
  // A pre-hook may replace the arguments, a hook the output (return nullopt to keep them).
  using ForwardPreHook = std::function<std::optional<Args>(Module&, const Args& args)>;
  using ForwardHook = std::function<std::optional<Value>(Module&, const Args& args, const Value& output)>;
  // A call wrapper runs around the whole call (pre-hooks, forward, hooks) and decides how and
  // when `proceed` runs it (activation checkpointing: once without recording, again in backward).
  // Wrappers nest in registration order, the first outermost.
  using Proceed = std::function<Value(Args)>;
  using CallWrapper = std::function<Value(Module&, Args args, const Proceed& proceed)>;

  explicit Module(std::string type_name) : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The single-tensor computation; override in layers. Call through operator() so hooks run.
  virtual Tensor forward(const Tensor& input);
  // The general computation. The default takes exactly one Tensor argument to forward(Tensor).
  virtual Value forward_args(const Args& args);

  // Runs the pre-hooks, forward_args and the hooks; errors are prefixed with the module chain
  // ("in Encoder > MultiheadAttention: ...").
  Value call(Args args);
  // One tensor in: the output as a Tensor (a layer), or as a Value when the module returns
  // something else (a forward whose other parameters are optional: nn::Value out = (*m)(ids)).
  ModuleOutput operator()(const Tensor& input);
  // Any other call: positional Values and nn::kw(...) keyword arguments.
  template <class... A>
    requires(!(sizeof...(A) == 1 && (std::convertible_to<A, const Tensor&> && ...)))
  Value operator()(A&&... args) {
    Args a;
    (a.add(std::forward<A>(args)), ...);
    return call(std::move(a));
  }

  const std::string& type_name() const { return type_name_; }

  // ---- registration (names are unique within a module; dots are not allowed)
  Tensor& register_parameter(const std::string& name, Tensor value, bool requires_grad = true);
  // A buffer that is not persistent (PyTorch's persistent=False: a cached mask, a lookup table
  // the constructor computes) is converted, moved and broadcast like the others but is not part
  // of state_dict() or load_state_dict(), nor of checkpoints.
  Tensor& register_buffer(const std::string& name, Tensor value, bool persistent = true);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

  // ---- access
  Tensor& param(const std::string& name);
  const Tensor& param(const std::string& name) const;
  bool has_param(const std::string& name) const;
  Tensor& buffer(const std::string& name);
  // Replaces a parameter's tensor (same name), e.g. after a dtype/format change or by FSDP.
  void set_param(const std::string& name, Tensor value);
  void set_buffer(const std::string& name, Tensor value);

  // Recursive, in registration order, names dotted from this module ("layer1.0.conv1.weight").
  // A tensor reached under several names (a shared or tied parameter, a module registered twice)
  // is listed once, under its first name, as PyTorch's remove_duplicate=True; state_dict() keeps
  // every name.
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true, bool remove_duplicate = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true, bool remove_duplicate = true) const;
  // The buffers a state dict or checkpoint holds: the persistent ones, recursively (a shared one
  // once, as named_buffers, unless remove_duplicate is false: state_dict() keeps every name).
  std::vector<std::pair<std::string, Tensor>> named_persistent_buffers(bool remove_duplicate = true) const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const { return children_; }
  std::vector<std::shared_ptr<Module>> children() const;  // each child once
  // This module ("" prefix) and every descendant, each once, under its first name (as PyTorch's).
  // A module that no shared_ptr owns (built on the stack) lists itself through a pointer that does
  // not own it, valid while the module lives.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules(const std::string& prefix = "");
  int64_t num_parameters() const;
  // Calls fn once on this module and on every descendant (pre-order); usable inside constructors.
  void apply(const std::function<void(Module&)>& fn);

  // Sets requires_grad on every parameter (PyTorch's module.requires_grad_(False) to freeze a
  // part of a model). Before wrapping: a wrapper that took the parameters over (FSDP) refuses it.
  void requires_grad_(bool requires_grad = true);

  // ---- modes and conversion
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Casts floating-point parameters and buffers.
  void to(ScalarType dtype);
  // PyTorch's module.to(memory_format=...): every 4-d/5-d parameter and buffer goes through
  // Tensor::to(fmt); a parameter of the wrong rank for the format raises (naming it).
  void to(MemoryFormat fmt);
  // Sets every parameter's gradient to none (PyTorch 1.13 zeroes them unless set_to_none=True;
  // docs/pytorch_defaults.md).
  void zero_grad();

  // ---- state
  // Every parameter and buffer, whole, keyed by name (so ordered by name, not by
  // registration). Wrappers that shard (FSDP) override both with their state-dict types.
  virtual std::map<std::string, Tensor> state_dict() const;
  // Copies values in (keeping each parameter's layout), all or nothing, and returns the keys
  // the module has that the dict lacks and those it has that the module lacks (PyTorch's
  // missing_keys and unexpected_keys). strict: any such key raises, listing all of them and the
  // rename that would match them when there is one (a wrapper's "module." prefix, say); shapes
  // must always match. Takes full dicts only: a sharded or local one (nn/state_dict.h) is an
  // Error saying where it came from.
  virtual IncompatibleKeys load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true);

  // ---- ownership by a wrapper (see ModuleOwner): set by wrappers on every module they take over
  void set_owner(std::shared_ptr<ModuleOwner> owner) { owner_ = std::move(owner); }
  ModuleOwner* owner() const { return owner_.get(); }

  // ---- hooks (FSDP builds on these)
  int register_forward_pre_hook(ForwardPreHook hook);
  int register_forward_hook(ForwardHook hook);
  // `kind` names the wrapper ("checkpoint") so has_call_wrapper can tell whether one is set.
  int register_call_wrapper(const std::string& kind, CallWrapper wrapper);
  bool has_call_wrapper(const std::string& kind) const;
  void remove_hook(int handle);

 protected:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  // For wrappers (FSDP, DDP): the one child is registered without a name, so parameter, buffer,
  // module and state-dict names are those of the wrapped module ("0.weight", not
  // "module.0.weight").
  void register_wrapped_module(std::shared_ptr<Module> module);

 private:
  void collect_params(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out, bool recurse) const;
  void collect_buffers(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out, bool recurse,
                       bool persistent_only) const;
  template <class F>
  void apply_to_tensors(F f);
  // apply_to_tensors' walk: f(name, tensor) gives each parameter's and buffer's new value.
  void convert_tensors(const std::function<Tensor(const std::string&, const Tensor&)>& f);
  // The call from wrapper `i` inward: wrappers i.., then pre-hooks, forward and hooks.
  Value call_from(size_t i, Args args);
  struct NamedWrapper {
    int handle;
    std::string kind;
    CallWrapper fn;
  };

  std::string type_name_;
  bool training_ = true;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::set<std::string> non_persistent_buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::vector<std::pair<int, ForwardPreHook>> pre_hooks_;
  std::vector<std::pair<int, ForwardHook>> post_hooks_;
  std::vector<NamedWrapper> call_wrappers_;
  std::shared_ptr<ModuleOwner> owner_;
  int next_hook_ = 0;
};

}  // namespace strider::nn
