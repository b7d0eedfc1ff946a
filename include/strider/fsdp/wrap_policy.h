#pragma once
// Which modules become FSDP units: auto-wrap policies, and wrapping by hand with wrap() inside
// an enable_wrap scope.
#include <memory>
#include <set>
#include <string>

#include "strider/dist/process_group.h"
#include "strider/fsdp/fully_sharded_data_parallel.h"
#include "strider/fsdp/options.h"
#include "strider/nn/module.h"

namespace strider::fsdp {

// Wraps a module once its not-yet-wrapped parameters reach min_num_params (PyTorch's default
// threshold: 100M).
AutoWrapPolicy size_based_auto_wrap_policy(int64_t min_num_params = 100'000'000);

// Wraps every module whose type_name() is listed (e.g. {"Block"} for each GPT block).
AutoWrapPolicy module_type_auto_wrap_policy(std::set<std::string> type_names);

// Inside this scope, wrap(module) wraps with these settings. Scopes do not nest.
class enable_wrap {
 public:
  enable_wrap(std::shared_ptr<dist::ProcessGroup> pg, FSDPOptions options = {});
  ~enable_wrap();
  enable_wrap(const enable_wrap&) = delete;
  enable_wrap& operator=(const enable_wrap&) = delete;
};

// A FullyShardedDataParallel around `module` with the enclosing enable_wrap scope's settings;
// an Error outside a scope.
std::shared_ptr<FullyShardedDataParallel> wrap(std::shared_ptr<nn::Module> module);

// PyTorch's wrap(): wrap(module) inside an enable_wrap scope, `module` unchanged outside one,
// for model code that runs both sharded and alone.
std::shared_ptr<nn::Module> wrap_if_enabled(std::shared_ptr<nn::Module> module);

}  // namespace strider::fsdp
