#include "strider/fsdp/wrap_policy.h"

#include "strider/fsdp/fully_sharded_data_parallel.h"

namespace strider::fsdp {
namespace {

struct WrapScope {
  std::shared_ptr<dist::ProcessGroup> pg;
  FSDPOptions options;
};
// The enable_wrap scope of this thread (a mode, like grad mode; set and cleared by the guard).
thread_local WrapScope* t_scope = nullptr;

}  // namespace

AutoWrapPolicy size_based_auto_wrap_policy(int64_t min_num_params) {
  return [min_num_params](const nn::Module&, bool recurse, int64_t nonwrapped_numel) {
    return recurse ? true : nonwrapped_numel >= min_num_params;
  };
}

AutoWrapPolicy module_type_auto_wrap_policy(std::set<std::string> type_names) {
  STRIDER_CHECK(!type_names.empty(), "module_type_auto_wrap_policy", "got no type names; name the module types to "
                "wrap as units, e.g. {\"Block\"}");
  auto decide = [types = type_names](const nn::Module& m, bool recurse, int64_t) {
    return recurse ? true : types.count(m.type_name()) > 0;
  };
  auto check = [types = std::move(type_names)](const nn::Module& root) {
    std::set<std::string> present;
    const_cast<nn::Module&>(root).apply([&](nn::Module& m) { present.insert(m.type_name()); });
    std::string absent, all;
    for (const std::string& t : types)
      if (!present.count(t)) absent += (absent.empty() ? "'" : ", '") + t + "'";
    for (const std::string& t : present) all += (all.empty() ? "" : ", ") + t;
    STRIDER_CHECK(absent.empty(), "module_type_auto_wrap_policy", "no module of type ", absent, " is in the model, "
                  "so it would make no unit of it (a misspelled name leaves the model one unit); the model's module "
                  "types are: ", all);
  };
  return AutoWrapPolicy(std::move(decide), std::move(check));
}

enable_wrap::enable_wrap(std::shared_ptr<dist::ProcessGroup> pg, FSDPOptions options) {
  STRIDER_CHECK(t_scope == nullptr, "enable_wrap", "enable_wrap scopes do not nest; close the outer one first");
  STRIDER_CHECK(pg != nullptr, "enable_wrap", "needs a process group");
  t_scope = new WrapScope{std::move(pg), std::move(options)};
}

enable_wrap::~enable_wrap() {
  delete t_scope;
  t_scope = nullptr;
}

std::shared_ptr<FullyShardedDataParallel> wrap(std::shared_ptr<nn::Module> module) {
  STRIDER_CHECK(t_scope != nullptr, "fsdp::wrap", "called outside an enable_wrap scope, so there are no settings to "
                "wrap with; open one (fsdp::enable_wrap scope(pg, options)), call FullyShardedDataParallel::wrap("
                "module, pg, options), or use wrap_if_enabled for code that also runs unsharded");
  return FullyShardedDataParallel::wrap(std::move(module), t_scope->pg, t_scope->options);
}

std::shared_ptr<nn::Module> wrap_if_enabled(std::shared_ptr<nn::Module> module) {
  if (!t_scope) return module;
  return wrap(std::move(module));
}

}  // namespace strider::fsdp
