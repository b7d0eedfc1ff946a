#pragma once
// What FSDP and DDP answer for the modules they wrapped when user code reaches those modules
// directly, through pointers kept from before wrap(), instead of through the wrapper
// (nn::ModuleOwner). Between steps those modules hold one rank's shards, so:
//   - a call of the wrapped module itself runs through the wrapper (the same collectives, the
//     same result), and so do its state_dict() and load_state_dict();
//   - a call of a module inside it runs when its parameters are whole at that moment (inside
//     the wrapper's forward, or a unit gathered around it) and is an Error naming the module,
//     the wrapper and the fix otherwise; its state_dict() and load_state_dict() are Errors;
//   - to(dtype) and to(memory_format) anywhere in the tree are Errors (the flat buffers fix
//     the dtype and layout), and so is a requires_grad_ that would change which parameters
//     train (fixed when the units were built); after the wrapper is destroyed everything is an
//     Error.
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "strider/nn/module.h"

namespace strider::fsdp {
class FullyShardedDataParallel;
}

namespace strider::fsdp::detail {

class FlatParamUnit;

class WrappedModuleOwner : public nn::ModuleOwner {
 public:
  // `description` names the wrapper in messages ("FullyShardedDataParallel (FULL_SHARD, 2 ranks)").
  WrappedModuleOwner(std::weak_ptr<nn::Module> wrapper, const nn::Module& wrapped, std::string description);
  // `m` (named `name` from the wrapped module) answers through this owner; `units` hold its
  // parameters (calls of it need them whole unless `m` is the unit's own module).
  void adopt(nn::Module& m, const std::string& name, std::vector<FlatParamUnit*> units);
  // While the wrapper's own forward runs, a call of the wrapped module goes straight through.
  class WrapperCall {
   public:
    explicit WrapperCall(WrappedModuleOwner& o) : o_(o) { ++o_.wrapper_calls_; }
    ~WrapperCall() { --o_.wrapper_calls_; }
    WrapperCall(const WrapperCall&) = delete;
    WrapperCall& operator=(const WrapperCall&) = delete;

   private:
    WrappedModuleOwner& o_;
  };

  nn::Value call(nn::Module& m, nn::Args args, const std::function<nn::Value(nn::Args)>& proceed) override;
  std::map<std::string, Tensor> state_dict(const nn::Module& m) override;
  nn::IncompatibleKeys load_state_dict(nn::Module& m, const std::map<std::string, Tensor>& state,
                                       bool strict) override;
  void check_conversion(const nn::Module& m, const std::string& what) override;
  // The wrapper (the engine, for DDP) when `m` is the wrapped module; an Error for a module
  // inside it or when the wrapper is gone.
  FullyShardedDataParallel& whole_model(const nn::Module& m, const std::string& what) const;

 private:
  std::shared_ptr<FullyShardedDataParallel> wrapper(const nn::Module& m, const std::string& what) const;
  std::string name_of(const nn::Module& m) const;
  [[noreturn]] void refuse(const nn::Module& m, const std::string& what, const std::string& fix) const;

  std::weak_ptr<nn::Module> wrapper_;
  const nn::Module* wrapped_;
  std::string description_;
  int wrapper_calls_ = 0;
  struct Entry {
    std::string name;
    std::vector<FlatParamUnit*> units;
  };
  std::unordered_map<const nn::Module*, Entry> entries_;
};

}  // namespace strider::fsdp::detail
