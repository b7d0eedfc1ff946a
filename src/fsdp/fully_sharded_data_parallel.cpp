#include "strider/fsdp/fully_sharded_data_parallel.h"

#include <cmath>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "fsdp/flat_param_unit.h"
#include "fsdp/offload_step_stream.h"
#include "fsdp/optimizer_in_backward.h"
#include "fsdp/offload_tier.h"
#include "fsdp/structure_check.h"
#include "fsdp/wrapped_module_owner.h"
#include "strider/dist/consistency.h"
#include "strider/optim/settings_description.h"
#include "strider/nn/deferred_init.h"
#include "strider/dist/exact_sum.h"
#include "strider/autograd/grad_mode.h"
#include "strider/ops/convert.h"
#include "strider/ops/factory.h"
#include "strider/ops/kernel_choice.h"
#include "strider/ops/pointwise.h"
#include "strider/ops/reduce.h"

namespace strider::fsdp {

using detail::FlatParamUnit;

std::shared_ptr<FullyShardedDataParallel> FullyShardedDataParallel::wrap(std::shared_ptr<nn::Module> module,
                                                                         std::shared_ptr<dist::ProcessGroup> pg,
                                                                         FSDPOptions options) {
  STRIDER_CHECK(module != nullptr && pg != nullptr, "FullyShardedDataParallel", "needs a module and a process group");
  STRIDER_CHECK(dynamic_cast<FullyShardedDataParallel*>(module.get()) == nullptr, "FullyShardedDataParallel",
                "the module is already wrapped");
  STRIDER_CHECK(module->owner() == nullptr, "FullyShardedDataParallel", "the module (", module->type_name(),
                ") is already inside a FullyShardedDataParallel or DistributedDataParallel wrapper, which holds its "
                "parameters; wrap the original model once");
  auto fsdp = std::shared_ptr<FullyShardedDataParallel>(
      new FullyShardedDataParallel(std::move(module), std::move(pg), std::move(options)));
  fsdp->build_units();
  empty_cache();  // the unsharded parameters just freed go back to the system, not the cache
  return fsdp;
}

FullyShardedDataParallel::FullyShardedDataParallel(std::shared_ptr<nn::Module> module,
                                                   std::shared_ptr<dist::ProcessGroup> pg, FSDPOptions options)
    : nn::Module("FullyShardedDataParallel"), module_(module), pg_(std::move(pg)), options_(std::move(options)) {
  register_wrapped_module(std::move(module));
  const int world = pg_->size();
  STRIDER_CHECK(options_.micro_batches == 0 || options_.deterministic, "FullyShardedDataParallel", "micro_batches ",
                options_.micro_batches, " only applies in deterministic mode; set deterministic = true or leave it 0");
  STRIDER_CHECK(!options_.deterministic || (options_.micro_batches > 0 && options_.micro_batches % world == 0 &&
                                            options_.micro_batches <= dist::kMaxContributions),
                "FullyShardedDataParallel", "deterministic mode needs micro_batches, the micro-batches per step, to be "
                "a positive multiple of the world size ", world, ", at most ", dist::kMaxContributions,
                " (the exact sums' headroom); got ", options_.micro_batches,
                ". Pick one that every world size you compare divides, e.g. 12 for 1, 2, 3, 4 and 6 ranks");
  STRIDER_CHECK(!options_.deterministic || !kernel_autotune(), "FullyShardedDataParallel",
                "deterministic mode needs the same kernels in every run, but kernel autotune is on: it picks "
                "oneDNN's implementations by timing, so results could differ bitwise between runs. Turn it off "
                "(set_kernel_autotune(false), or unset STRIDER_AUTOTUNE)");
  STRIDER_CHECK(options_.cpu_offload.read_ahead_bytes >= 0, "FullyShardedDataParallel",
                "CPUOffload::read_ahead_bytes must be >= 0 (0 reads offloaded state when first touched), got ",
                options_.cpu_offload.read_ahead_bytes);
  STRIDER_CHECK(options_.cpu_offload.write_behind_bytes >= 0, "FullyShardedDataParallel",
                "CPUOffload::write_behind_bytes must be >= 0 (0 waits for each write), got ",
                options_.cpu_offload.write_behind_bytes);
  STRIDER_CHECK(options_.limit_all_gathers >= 0, "FullyShardedDataParallel",
                "limit_all_gathers must be >= 0 (the units gathered ahead of use; 0 prefetches none), got ",
                options_.limit_all_gathers);
  tree_ = std::make_shared<detail::TreeState>();
  tree_->pg = pg_;
  tree_->groups = std::make_shared<detail::PlanGroups>(pg_, options_.shard_group_size, options_.hybrid_groups);
  tree_->options = options_;
  if (options_.cpu_offload.offload_params) {
    tree_->tier = detail::OffloadTier::open(options_.cpu_offload.directory);
    tree_->tier->keep_spare_pages(options_.cpu_offload.read_ahead_bytes);
    tree_->tier->limit_write_behind(options_.cpu_offload.write_behind_bytes);
  }
}

FullyShardedDataParallel::~FullyShardedDataParallel() = default;

namespace {

std::vector<std::string> describe_options(const FSDPOptions& o) {
  auto dtype = [](const std::optional<ScalarType>& t) {
    std::ostringstream s;
    if (t) s << *t; else s << "unchanged";
    return s.str();
  };
  std::vector<std::string> lines = {
      "sharding_strategy " + to_string(o.sharding_strategy),
      "unit_strategy " + std::string(o.unit_strategy ? "set" : "none"),
      "shard_group_size " + std::to_string(o.shard_group_size),
      "backward_prefetch " + std::to_string(static_cast<int>(o.backward_prefetch)),
      "forward_prefetch " + std::to_string(o.forward_prefetch),
      "limit_all_gathers " + std::to_string(o.limit_all_gathers),
      "sync_module_states " + std::to_string(o.sync_module_states),
      "deterministic " + std::to_string(o.deterministic) + " micro_batches " + std::to_string(o.micro_batches),
      "offload_params " + std::to_string(o.cpu_offload.offload_params),
      "auto_wrap_policy " + std::string(o.auto_wrap_policy ? "set" : "none")};
  if (o.mixed_precision)
    lines.push_back("mixed_precision param " + dtype(o.mixed_precision->param_dtype) + " reduce " +
                    dtype(o.mixed_precision->reduce_dtype) + " buffer " + dtype(o.mixed_precision->buffer_dtype));
  return lines;
}

}  // namespace

void FullyShardedDataParallel::sync_module_states() {
  // In place, whatever the memory format (a contiguous copy would leave channels-last
  // parameters unsynchronized).
  dist::CollectiveLabel label("sync_module_states");
  for (auto& [name, p] : module_->named_parameters()) {
    if (nn::is_deferred(p)) continue;  // drawn from a counter-based generator: equal on every rank
    STRIDER_CHECK(p.is_non_overlapping_and_dense(), "sync_module_states", "parameter '", name, "' with strides ",
                  p.strides(), " is not dense; make it contiguous (or channels-last) first");
    pg_->broadcast(p, 0);
  }
  for (auto& [name, b] : module_->named_buffers()) pg_->broadcast(b, 0);
}

detail::ShardingPlan FullyShardedDataParallel::plan_for(const nn::Module& m) {
  std::optional<ShardingStrategy> s;
  if (options_.unit_strategy) s = options_.unit_strategy(m);
  return detail::make_plan(s.value_or(options_.sharding_strategy), *tree_->groups);
}

void FullyShardedDataParallel::prepare_for_units() {
  nn::Module& root = *module_;
  STRIDER_CHECK(options_.shard_group_size >= 0, "FullyShardedDataParallel", "shard_group_size ",
                options_.shard_group_size, " is negative; use 0 (the ranks of one host) or a divisor of the world size ",
                pg_->size());
  if (options_.auto_wrap_policy) options_.auto_wrap_policy.check(root);
  // Before any collective touches a parameter: every rank must wrap the same model the same way.
  detail::check_structure_across_ranks(*pg_, "FullyShardedDataParallel", root, describe_options(options_));
  if (options_.sync_module_states) sync_module_states();
  if (options_.mixed_precision && options_.mixed_precision->buffer_dtype) {
    const ScalarType bdt = *options_.mixed_precision->buffer_dtype;
    root.apply([&](nn::Module& m) {
      for (auto& [name, b] : m.named_buffers(false))
        if (is_floating_point(b.dtype())) m.set_buffer(name, b.to(bdt));
    });
  }
}

void FullyShardedDataParallel::note_owned(const FlatParamUnit& u, OwnedParams& owned) {
  for (auto& s : u.params()) {
    owned.tensors.insert(s.shard.impl_ptr().get());
    owned.slots.insert({s.owner, s.name});
    for (auto& a : s.aliases) owned.slots.insert({a.owner, a.name});
  }
}

void FullyShardedDataParallel::adopt(FullyShardedDataParallel& nested, const std::string& name, OwnedParams& owned) {
  STRIDER_CHECK(nested.options_.deterministic == options_.deterministic &&
                    nested.options_.micro_batches == options_.micro_batches,
                "FullyShardedDataParallel", "module '", name, "' was wrapped with deterministic ",
                nested.options_.deterministic, " and micro_batches ", nested.options_.micro_batches,
                " but its parent with deterministic ", options_.deterministic, " and micro_batches ",
                options_.micro_batches, "; a tree reduces its gradients one way, so wrap both the same");
  // Its tree's units: its own and those it adopted from wrappers nested deeper still.
  const std::shared_ptr<detail::TreeState> old = nested.tree_;
  for (FlatParamUnit* u : old->units) {
    u->set_tree(*tree_);
    if (!name.empty())
      for (auto& s : u->params()) {
        s.full_name = name + "." + s.full_name;
        for (auto& a : s.aliases) a.full_name = name + "." + a.full_name;
      }
    tree_->units.push_back(u);
    note_owned(*u, owned);
  }
  adopted_.push_back(old);
  for (auto& [n, m] : nested.named_modules())
    if (auto* w = dynamic_cast<FullyShardedDataParallel*>(m.get()); w && w->tree_ == old) w->tree_ = tree_;
}

namespace {

// A slot holding a parameter an earlier unit took, outside that unit's slots (or still holding
// the tensor a flat unit retired): the parameter is tied across units, which cannot be, as each
// unit gathers and frees its own.
void refuse_tie_across_units(bool tied, const std::string& full_name) {
  STRIDER_CHECK(!tied, "FullyShardedDataParallel", "parameter '", full_name,
                "' is the same tensor as a parameter another unit took (a tied weight split over two units); each "
                "unit gathers and frees its own parameters, so tied slots must be in one unit: wrap the modules "
                "that share it in one unit (a policy or wrap() on their common parent), or untie them");
}

// The parameters of `modules` (name, module) that no unit owns yet, each marked owned; a
// parameter held by several slots among them (a tied weight) is one ref with the others as
// aliases.
std::vector<FlatParamUnit::ParamRef> collect_refs(
    const std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>>& modules,
    detail::OwnedParams& owned) {
  std::vector<FlatParamUnit::ParamRef> refs;
  std::unordered_map<const TensorImpl*, size_t> index;
  for (auto& [mname, m] : modules)
    for (auto& [pname, p] : m->named_parameters(false, false)) {
      const std::string full_name = mname.empty() ? pname : mname + "." + pname;
      const TensorImpl* impl = p.impl_ptr().get();
      if (auto it = index.find(impl); it != index.end()) {
        refs[it->second].aliases.push_back({m.get(), pname, full_name});
        continue;
      }
      refuse_tie_across_units(p.storage()->retired_reason() != nullptr, full_name);
      if (!owned.tensors.insert(impl).second) {  // a unit made before holds it: in one of its slots?
        refuse_tie_across_units(!owned.slots.count({m.get(), pname}), full_name);
        continue;
      }
      index[impl] = refs.size();
      refs.push_back({m.get(), pname, full_name, {}});
    }
  return refs;
}

// The parameters under `top` (named from `prefix`) that no unit owns yet, skipping wrapped
// descendants.
std::vector<FlatParamUnit::ParamRef> unowned_params(nn::Module& top, const std::string& prefix,
                                                    detail::OwnedParams& owned) {
  auto modules = top.named_modules(prefix);
  std::erase_if(modules, [&](const auto& named) {
    return named.second.get() != &top && dynamic_cast<FullyShardedDataParallel*>(named.second.get());
  });
  return collect_refs(modules, owned);
}

}  // namespace

void FullyShardedDataParallel::build_units() {
  autograd::NoGradGuard no_grad;
  prepare_for_units();
  nn::Module& root = *module_;
  // Parameters already owned by a unit (by hand-wrapped descendants or by auto-wrapped ones).
  OwnedParams owned;
  // A unit hooked on `hooked`, its strategy chosen for `m` (the wrapped root's, for the root unit).
  auto add_unit = [&](nn::Module& hooked, const nn::Module& m, std::vector<FlatParamUnit::ParamRef> refs) {
    units_.push_back(std::make_unique<FlatParamUnit>(*tree_, hooked, std::move(refs), plan_for(m)));
    tree_->units.push_back(units_.back().get());
    note_owned(*units_.back(), owned);  // registries now hold shards
  };
  // Post-order walk: children first, so a parent only counts parameters its wrapped children
  // left over (the nonwrapped_numel of PyTorch's policies).
  std::function<int64_t(nn::Module&, const std::string&, bool)> visit = [&](nn::Module& m, const std::string& name,
                                                                            bool top) -> int64_t {
    if (auto* nested = dynamic_cast<FullyShardedDataParallel*>(&m); nested && !top) {
      adopt(*nested, name, owned);  // wrapped by hand: its units join this tree
      return 0;
    }
    const bool look_inside = !options_.auto_wrap_policy || options_.auto_wrap_policy(m, true, 0);
    int64_t nonwrapped = 0;
    for (auto& [pname, p] : m.named_parameters(false))
      if (!owned.has(p)) nonwrapped += p.numel();
    for (auto& [cname, c] : m.named_children()) {
      const std::string child_name = cname.empty() ? name : name.empty() ? cname : name + "." + cname;
      if (look_inside) {
        nonwrapped += visit(*c, child_name, false);
      } else {
        for (auto& [pname, p] : c->named_parameters()) nonwrapped += owned.has(p) ? 0 : p.numel();
      }
    }
    if (!top && options_.auto_wrap_policy && nonwrapped > 0 && options_.auto_wrap_policy(m, false, nonwrapped)) {
      if (auto refs = unowned_params(m, name, owned); !refs.empty()) add_unit(m, m, std::move(refs));
      return 0;
    }
    return nonwrapped;
  };
  visit(root, "", true);
  // The root unit: whatever is left, hooked on this wrapper so it runs first and last.
  add_unit(*this, root, unowned_params(root, "", owned));
  tree_->root = units_.back().get();
  check_units_across_ranks();
  take_ownership("FullyShardedDataParallel (" + to_string(options_.sharding_strategy) + ", " +
                 std::to_string(pg_->size()) + " ranks)");
}

// Deterministic mode makes a step's gradients only after its last micro-batch's backward: every
// optimizer holding these parameters (registered or not) is refused a step in between, where it
// would apply nothing and leave the micro-batches paired across steps from then on.
void FullyShardedDataParallel::refuse_steps_between_micro_batches() {
  if (!options_.deterministic) return;
  std::weak_ptr<detail::TreeState> tree = tree_;
  const int w = pg_->size(), m = options_.micro_batches, per_rank = m / w;
  auto check = [tree, per_rank, m, w]() -> std::string {
    auto t = tree.lock();
    if (!t) return "";
    // A step in backward begins before that backward is counted.
    const int done = t->backwards_since_step + (t->callback_queued ? 1 : 0);
    if (done % per_rank == 0) return "";
    return "deterministic mode: " + std::to_string(done % per_rank) + " of this rank's " + std::to_string(per_rank) +
           " backward passes per step (" + std::to_string(m) + " micro-batches over " + std::to_string(w) +
           " ranks) have run, so the gradients are incomplete; run backward once per micro-batch of this rank's "
           "share before each step";
  };
  for (FlatParamUnit* u : tree_->units)
    for (const auto& s : u->params()) s.shard.storage()->set_step_check(check);
}

void FullyShardedDataParallel::take_ownership(const std::string& description) {
  refuse_steps_between_micro_batches();
  owner_ = std::make_shared<detail::WrappedModuleOwner>(weak_from_this(), *module_, description);
  std::unordered_map<const nn::Module*, std::vector<FlatParamUnit*>> units_of;
  for (FlatParamUnit* u : tree_->units)
    for (const auto& s : u->params()) {
      std::vector<const nn::Module*> owners = {s.owner};
      for (const auto& a : s.aliases) owners.push_back(a.owner);
      for (const nn::Module* o : owners) {
        auto& v = units_of[o];
        if (std::find(v.begin(), v.end(), u) == v.end()) v.push_back(u);
      }
    }
  // Hand-wrapped descendants keep their own owner (a call of their module goes through them).
  std::function<void(nn::Module&, const std::string&)> visit = [&](nn::Module& m, const std::string& name) {
    if (&m != module_.get() && dynamic_cast<FullyShardedDataParallel*>(&m)) return;
    owner_->adopt(m, name, units_of[&m]);
    m.set_owner(owner_);
    for (auto& [cname, c] : m.named_children())
      visit(*c, cname.empty() ? name : name.empty() ? cname : name + "." + cname);
  };
  visit(*module_, "");
}

void FullyShardedDataParallel::build_buckets(int64_t bucket_bytes, const std::vector<std::string>& option_lines) {
  autograd::NoGradGuard no_grad;
  built_as_ddp_ = true;
  detail::check_structure_across_ranks(*pg_, "DistributedDataParallel", *module_, option_lines);
  sync_module_states();
  OwnedParams owned;
  std::vector<FlatParamUnit::ParamRef> refs = collect_refs(module_->named_modules(), owned);
  std::vector<FlatParamUnit::ParamRef> bucket;
  int64_t bytes = 0;
  auto close_bucket = [&] {
    if (bucket.empty()) return;
    units_.push_back(std::make_unique<FlatParamUnit>(*tree_, *this, std::move(bucket), plan_for(*module_)));
    tree_->units.push_back(units_.back().get());
    bucket.clear();
    bytes = 0;
  };
  for (auto it = refs.rbegin(); it != refs.rend(); ++it) {
    const Tensor p = it->owner->param(it->name);
    const int64_t b = static_cast<int64_t>(p.nbytes());
    const bool other_dtype = !bucket.empty() && bucket.front().owner->param(bucket.front().name).dtype() != p.dtype();
    if (other_dtype || (!bucket.empty() && bytes + b > bucket_bytes)) close_bucket();
    bucket.push_back(*it);
    bytes += b;
  }
  close_bucket();
  // The root drives the iteration (step counter, the end-of-backward callback); it owns nothing.
  units_.push_back(std::make_unique<FlatParamUnit>(*tree_, *this, std::vector<FlatParamUnit::ParamRef>{},
                                                   plan_for(*module_)));
  tree_->units.push_back(units_.back().get());
  tree_->root = units_.back().get();
  check_units_across_ranks();
  take_ownership("DistributedDataParallel (" + std::to_string(pg_->size()) + " ranks)");
}

void FullyShardedDataParallel::check_units_across_ranks() {
  // The wrap policy (a callable) cannot be compared; the units it produced can.
  std::vector<std::string> layout;
  for (FlatParamUnit* u : tree_->units) {
    std::string line = "unit " + u->name() + " " + to_string(u->plan().strategy) + ":";
    for (auto& s : u->params()) line += " " + s.full_name;
    layout.push_back(line);
  }
  dist::check_same_across_ranks(*pg_, "FullyShardedDataParallel: the units the wrap policy made", layout);
  options_.hybrid_groups = tree_->groups->made_hybrid();  // enable_wrap reuses them for its next wrap
}

nn::Value FullyShardedDataParallel::forward_args(const nn::Args& args) {
  detail::WrappedModuleOwner::WrapperCall through_wrapper(*owner_);
  return module_->call(args);
}

FullyShardedDataParallel::NoSyncGuard::NoSyncGuard(FullyShardedDataParallel& m) : m_(m) {
  STRIDER_CHECK(!m.options_.deterministic, "FullyShardedDataParallel::no_sync",
                "deterministic mode reduces every micro-batch's gradient exactly as its backward ends, so it has no "
                "no_sync; run the micro-batches' backwards without it (the step's gradient is their mean)");
  m_.tree_->no_sync = true;
}
FullyShardedDataParallel::NoSyncGuard::~NoSyncGuard() { m_.tree_->no_sync = false; }
bool FullyShardedDataParallel::no_sync_active() const { return tree_->no_sync; }

double FullyShardedDataParallel::clip_grad_norm_(double max_norm) {
  autograd::NoGradGuard no_grad;
  STRIDER_CHECK(!tree_->optimizer_in_backward, "FullyShardedDataParallel::clip_grad_norm_", "the optimizer was "
                "registered with in_backward, so each unit stepped as soon as its gradients were reduced and none are "
                "left to clip (clipping needs the norm over all of them before any update); register the optimizer "
                "without in_backward to clip");
  if (options_.deterministic) return clip_grad_norm_exact(max_norm);
  // Each unit's shard is held by world / shards ranks (its replicas), so its squares are
  // weighted by shards / world before one sum over the world counts every element once.
  double local = 0;
  std::vector<Tensor> grads;
  const double world = pg_->size();
  for (FlatParamUnit* u : tree_->units)
    for (auto& s : u->params()) {
      Tensor g = s.shard.grad();
      if (!g.defined()) continue;
      grads.push_back(g);
      const Tensor g64 = g.to(kDouble);
      local += ops::sum(ops::mul(g64, g64)).item<double>() * u->plan().shards() / world;
    }
  Tensor total = full({1}, local, kDouble);
  if (pg_->size() > 1) {
    dist::CollectiveLabel label("clip_grad_norm_");
    pg_->all_reduce(total, dist::ReduceOp::Sum);  // padding rows are zero
  }
  const double norm = std::sqrt(total.item<double>());
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1.0)
    for (Tensor& g : grads) ops::mul_(g, coef);
  return norm;
}

double FullyShardedDataParallel::clip_grad_norm_exact(double max_norm) {
  // Each element's square is added exactly once over the world (by the first replica of its
  // shard) into an exact sum, so the norm does not depend on how the elements are split.
  dist::ExactSum squares;
  std::vector<Tensor> grads;
  for (FlatParamUnit* u : tree_->units) {
    const auto& replicas = u->plan().replica_group;
    const bool counts = !replicas || replicas->rank() == 0;
    for (auto& s : u->params()) {
      Tensor g = s.shard.grad();
      if (!g.defined()) continue;
      grads.push_back(g);
      if (!counts) continue;
      const Tensor f = g.to(kFloat).contiguous();
      squares.add_squares(f.data_ptr<float>(), f.numel());
    }
  }
  {
    dist::CollectiveLabel label("clip_grad_norm_");
    dist::all_reduce_exact(*pg_, squares);
  }
  const double norm = squares.overflowed() ? std::nan("") : std::sqrt(squares.value());
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1.0)
    for (Tensor& g : grads) ops::mul_(g, coef);
  return norm;
}

std::pair<FlatParamUnit*, size_t> FullyShardedDataParallel::find_slot(const Tensor& shard) const {
  for (FlatParamUnit* u : tree_->units)
    for (size_t i = 0; i < u->params().size(); ++i)
      if (u->params()[i].shard.impl_ptr() == shard.impl_ptr()) return {u, i};
  if (const std::string* why = shard.storage()->retired_reason())
    STRIDER_CHECK(false, "FullyShardedDataParallel", "a parameter of shape ", shard.sizes(), " is stale: ", *why);
  STRIDER_CHECK(false, "FullyShardedDataParallel", "a parameter of shape ", shard.sizes(),
                " belongs to no unit of this model; build the optimizer from this wrapped model's named_parameters() "
                "(not another model's)");
  return {nullptr, 0};
}

int64_t FullyShardedDataParallel::num_units() const { return static_cast<int64_t>(tree_->units.size()); }

int64_t FullyShardedDataParallel::largest_unit_bytes() const {
  int64_t best = 0;
  for (FlatParamUnit* u : tree_->units) best = std::max(best, u->gathered_bytes());
  return best;
}

bool FullyShardedDataParallel::steps_in_backward() const { return tree_->optimizer_in_backward != nullptr; }

void FullyShardedDataParallel::register_optimizer(optim::Optimizer& optimizer, OptimizerRegistration how) {
  // Ranks that step with other settings (another lr, Adam against SGD) train diverged replicas
  // and shards that no longer belong to one model; a scheduler later changes them alike.
  dist::check_same_across_ranks(*pg_, "FullyShardedDataParallel::register_optimizer: the optimizer's kind and "
                                "param group options", optim::describe_settings(optimizer));
  // Every parameter must be one this model trains: an optimizer built before wrap() or on
  // another model would step tensors no gradient ever reaches.
  for (const auto& [name, p] : optimizer.params()) {
    try {
      find_slot(p);
    } catch (const Error& e) {
      throw Error(std::string("[FullyShardedDataParallel::register_optimizer] the optimizer's parameter '") + name +
                  "' is not one of this model's: " + e.what());
    }
  }
  // Each shard's place in its whole parameter: state rounded stochastically is keyed by it, so
  // the run's bits do not depend on the world size.
  for (size_t k = 0; k < optimizer.params().size(); ++k) {
    auto [unit, i] = find_slot(optimizer.params()[k].second);
    optimizer.set_element_offset(k, unit->own_rows(i).begin * unit->layout()[i].row_numel);
  }
  std::weak_ptr<detail::TreeState> tree = tree_;
  if (how.in_backward) {
    STRIDER_CHECK(!tree_->optimizer_in_backward, "FullyShardedDataParallel::register_optimizer", "an optimizer "
                  "already steps in backward for this model; one backward can drive only one");
    STRIDER_CHECK(optimizer.stepped_by().empty(), "FullyShardedDataParallel::register_optimizer", "the optimizer's "
                  "updates are already applied by ", optimizer.stepped_by());
    std::vector<const FlatParamUnit*> units;
    for (const auto& [name, p] : optimizer.params()) units.push_back(find_slot(p).first);
    tree_->optimizer_in_backward = std::make_shared<detail::OptimizerInBackward>(optimizer, units);
    optimizer.set_stepped_by("FullyShardedDataParallel's backward (register_optimizer with in_backward)");
  }
  if (tree_->tier && !how.in_backward) {
    // The step streams over the offload files: read ahead, write back as each parameter is done.
    if (!tree_->step_stream)
      tree_->step_stream =
          std::make_shared<detail::OffloadStepStream>(*tree_->tier, options_.cpu_offload.read_ahead_bytes);
    std::weak_ptr<detail::OffloadStepStream> stream = tree_->step_stream;
    optimizer.register_step_pre_hook([stream] {
      if (auto s = stream.lock()) s->begin_step();
    });
    optimizer.register_param_update_hooks(
        {[stream, &optimizer](size_t i) {
           if (auto s = stream.lock()) s->before(optimizer, i);
         },
         [stream, &optimizer](size_t i) {
           if (auto s = stream.lock()) s->after(optimizer, i);
         }});
  }
  optimizer.register_step_post_hook([tree] {
    if (auto t = tree.lock()) {
      t->backwards_since_step = 0;
      if (t->step_stream) t->step_stream->end_step();
      for (FlatParamUnit* u : t->units) u->refresh_full_params();
    }
  });
}

std::map<std::string, std::map<std::string, Tensor>> FullyShardedDataParallel::full_optimizer_state_dict(
    optim::Optimizer& optimizer) {
  autograd::NoGradGuard no_grad;
  std::map<std::string, std::map<std::string, Tensor>> out;
  auto& state = optimizer.state();
  for (const auto& [pname, p] : named_parameters()) {
    // Every rank of a shard group must join each gather: a parameter that has not stepped
    // anywhere has no state, but one that stepped has it on every rank.
    auto it = state.find(pname);
    std::vector<std::string> keys;
    if (it != state.end())
      for (const auto& [key, t] : it->second) keys.push_back(key);
    dist::check_same_across_ranks(*pg_, "full_optimizer_state_dict: state of '" + pname + "'", keys);
    if (keys.empty()) continue;
    auto [unit, i] = find_slot(p);
    for (const std::string& key : keys) out[unit->params()[i].full_name][key] = unit->gather_full(i, it->second.at(key));
  }
  return out;
}

int64_t FullyShardedDataParallel::bytes_sent() const {
  std::vector<const dist::ProcessGroup*> groups;
  for (FlatParamUnit* u : tree_->units)
    for (const auto& g : {u->plan().shard_group, u->plan().replica_group})
      if (g && std::find(groups.begin(), groups.end(), g.get()) == groups.end()) groups.push_back(g.get());
  if (std::find(groups.begin(), groups.end(), pg_.get()) == groups.end()) groups.push_back(pg_.get());
  int64_t total = 0;
  for (const dist::ProcessGroup* g : groups) total += g->bytes_sent();
  return total;
}

void FullyShardedDataParallel::wait_for_pending_gathers() {
  for (FlatParamUnit* u : tree_->units)
    if (u->plan().gathers_after_step()) u->use_full_params(), u->use_shards();
}

std::vector<UnitLayout> FullyShardedDataParallel::unit_layouts() const {
  std::vector<UnitLayout> out;
  for (FlatParamUnit* u : tree_->units) {
    UnitLayout l;
    l.name = u->name();
    l.strategy = u->plan().strategy;
    l.flat_shards = u->plan().flat_shards();
    l.full_params_persist = u->plan().full_params_persist;
    l.free_after_forward = u->plan().free_after_forward;
    l.layout = u->layout();
    l.replicas = u->plan().flat_shards() ? u->plan().replicas() : pg_->size();
    l.param_bytes = static_cast<int64_t>(element_size(u->dtype()));
    // NoShard computes with the module's own tensors (nothing is cast).
    l.compute_bytes = u->plan().flat_shards() ? static_cast<int64_t>(element_size(tree_->compute_dtype(u->dtype())))
                                              : l.param_bytes;
    l.reduce_bytes = static_cast<int64_t>(element_size(tree_->reduce_dtype(u->dtype())));
    l.is_root = u == tree_->root;
    l.exact_gradients = options_.deterministic;
    if (options_.deterministic) l.micro_batches_per_rank = options_.micro_batches / pg_->size();
    out.push_back(std::move(l));
  }
  return out;
}

FSDPStats FullyShardedDataParallel::stats() const {
  FSDPStats s = tree_->stats;
  if (tree_->tier) {
    s.offload_peak_held_bytes = tree_->tier->peak_held_bytes();
    s.offload_write_wait_seconds = tree_->tier->write_wait_seconds() - tree_->write_wait_at_reset;
  }
  return s;
}

void FullyShardedDataParallel::reset_stats() {
  tree_->stats = FSDPStats{};
  if (tree_->tier) {
    tree_->tier->reset_peak_held();
    tree_->write_wait_at_reset = tree_->tier->write_wait_seconds();
  }
}

}  // namespace strider::fsdp
