#include "fsdp/wrapped_module_owner.h"

#include "fsdp/flat_param_unit.h"
#include "strider/fsdp/fully_sharded_data_parallel.h"

namespace strider::fsdp::detail {

WrappedModuleOwner::WrappedModuleOwner(std::weak_ptr<nn::Module> wrapper, const nn::Module& wrapped,
                                       std::string description)
    : wrapper_(std::move(wrapper)), wrapped_(&wrapped), description_(std::move(description)) {}

void WrappedModuleOwner::adopt(nn::Module& m, const std::string& name, std::vector<FlatParamUnit*> units) {
  std::erase_if(units, [&](const FlatParamUnit* u) { return &u->module() == &m; });  // it gathers itself
  entries_[&m] = {name, std::move(units)};
}

std::string WrappedModuleOwner::name_of(const nn::Module& m) const {
  auto it = entries_.find(&m);
  const std::string name = it == entries_.end() || it->second.name.empty() ? "" : "'" + it->second.name + "' ";
  return &m == wrapped_ ? "the wrapped module (" + m.type_name() + ")" : "module " + name + "(" + m.type_name() + ")";
}

void WrappedModuleOwner::refuse(const nn::Module& m, const std::string& what, const std::string& fix) const {
  throw Error("[" + what + "] " + name_of(m) + " is inside " + description_ +
              ", which keeps only this rank's shards of its parameters between steps; " + fix);
}

std::shared_ptr<FullyShardedDataParallel> WrappedModuleOwner::wrapper(const nn::Module& m, const std::string& what) const {
  auto w = wrapper_.lock();
  if (!w)
    throw Error("[" + what + "] " + name_of(m) + " was wrapped by " + description_ +
                ", which has since been destroyed; its parameters are still that wrapper's shards of this rank. "
                "Keep the wrapper alive, or save a full state dict through it before dropping it and load that "
                "into a fresh model");
  return std::static_pointer_cast<FullyShardedDataParallel>(w);
}

nn::Value WrappedModuleOwner::call(nn::Module& m, nn::Args args, const std::function<nn::Value(nn::Args)>& proceed) {
  if (&m == wrapped_) {
    if (wrapper_calls_ > 0) return proceed(std::move(args));
    // Called through a pointer kept from before the wrap: the wrapper's own call gathers,
    // computes and frees exactly as (*model)(x) would (collective, like that call).
    return wrapper(m, "forward")->call(std::move(args));
  }
  auto it = entries_.find(&m);
  if (it != entries_.end())
    for (FlatParamUnit* u : it->second.units)
      if (!u->params_in_place(m)) {
        wrapper(m, "forward");  // a destroyed wrapper says so first
        refuse(m, "forward",
               "called on its own outside the wrapper's forward it would compute with those shards. Call the wrapped "
               "model ((*model)(x)), or wrap this module as a unit of its own (an auto-wrap policy or wrap()) so a "
               "call of it gathers its parameters");
      }
  return proceed(std::move(args));
}

std::map<std::string, Tensor> WrappedModuleOwner::state_dict(const nn::Module& m) {
  auto w = wrapper(m, "state_dict");
  if (&m == wrapped_) return w->state_dict();  // whole tensors (collective), under the same names
  refuse(m, "state_dict",
         "its own state_dict() would hold those shards as if they were whole tensors. Take the wrapped model's "
         "state_dict() (whole tensors, collective) and select this module's keys, which start with its name");
}

nn::IncompatibleKeys WrappedModuleOwner::load_state_dict(nn::Module& m, const std::map<std::string, Tensor>& state,
                                                         bool strict) {
  auto w = wrapper(m, "load_state_dict");
  if (&m == wrapped_) return w->load_state_dict(state, strict);
  refuse(m, "load_state_dict",
         "whole tensors cannot be copied into them. Load into the wrapped model, with this module's keys "
         "prefixed by its name (nn::add_key_prefix), and strict = false if the dict holds only this module");
}

FullyShardedDataParallel& WrappedModuleOwner::whole_model(const nn::Module& m, const std::string& what) const {
  auto w = wrapper(m, what);
  if (&m != wrapped_)
    refuse(m, what, "only the whole model can be saved or loaded: pass the wrapped model (or the module you wrapped)");
  return *w;  // the wrapper itself keeps it alive
}

void WrappedModuleOwner::check_conversion(const nn::Module& m, const std::string& what) {
  if (what == "requires_grad_")
    refuse(m, what,
           "which parameters train was fixed when it built its units (a frozen parameter gets no gradient reduction "
           "and no optimizer state). Call requires_grad_ on the model before wrap()");
  refuse(m, what,
         "their dtype and memory format are fixed in its flat buffers. Convert the model before wrap(); for "
         "lower-precision compute use FSDPOptions::mixed_precision");
}

}  // namespace strider::fsdp::detail

namespace strider::fsdp {

nn::Module& whole_model_of(nn::Module& m, const std::string& what) {
  if (auto* owner = dynamic_cast<const detail::WrappedModuleOwner*>(m.owner())) return owner->whole_model(m, what);
  return m;
}

}  // namespace strider::fsdp
