#pragma once
// FullyShardedDataParallel: parameters, gradients and optimizer state sharded across the ranks
// of a ProcessGroup, training code that reads like local training:
//
//   auto model = fsdp::FullyShardedDataParallel::wrap(gpt, pg, {
//       .auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Block"})});
//   optim::AdamW opt(model->named_parameters(), {.lr = 3e-4});
//   model->register_optimizer(opt);  // ShardOptimizer gathers updated shards after each step
//   Tensor loss = cross_entropy((*model)(x), y);
//   opt.zero_grad(); loss.backward(); opt.step();
//
// Every parameter is split along dim 0 into one equal piece per rank of its shard group (padded
// with zero rows; the shard group is the world except under hybrid strategies),
// keeping its name, dtype and memory format: between steps named_parameters() are these local
// shards, so optimizers, state dicts and clip_grad_norm_ work per named parameter. The
// parameters of one unit travel together: one all-gather before the unit's forward (and again
// before its backward under FullShard), one reduce-scatter of its gradients after its backward.
// While gathered, parameters have their original shapes, strides and memory format.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "strider/dist/process_group.h"
#include "strider/fsdp/cost_model.h"
#include "strider/fsdp/options.h"
#include "strider/fsdp/stats.h"
#include "strider/nn/module.h"
#include "strider/optim/optimizer.h"

namespace strider::fsdp {

namespace detail {
struct TreeState;
class FlatParamUnit;
// What the units made so far hold while a tree is built: their tensors (originals and shards)
// and the registry slots they fill (a tensor found in any other slot is tied across units).
struct OwnedParams {
  std::unordered_set<const TensorImpl*> tensors;
  std::set<std::pair<const nn::Module*, std::string>> slots;
  bool has(const Tensor& p) const { return tensors.count(p.impl_ptr().get()) > 0; }
};
struct ParamSlot;
struct ShardingPlan;
class WrappedModuleOwner;
}  // namespace detail

// How one rank holds one parameter between steps (what a sharded checkpoint writes and reads).
struct ParameterShard {
  std::string name;         // the wrapped module's name for it (as in full_state_dict)
  std::string unit;         // the unit it travels with
  Tensor padded;            // the local shard as named_parameters() shows it; optimizer state has its shape
  Tensor rows;              // this rank's unpadded rows of the whole parameter: a view of `padded`
  DimVector global_sizes;   // the whole parameter's shape
  int64_t row_offset = 0;   // `rows` are rows [row_offset, row_offset + rows.size(0)) of the whole
  int replica_rank = 0;     // among the ranks holding these same rows (hybrid sharding, no sharding)
  int replicas = 1;
};

// How FullyShardedDataParallel::register_optimizer drives an optimizer.
struct OptimizerRegistration {
  bool in_backward = false;  // step each unit as its gradients are reduced, during backward
};

class FullyShardedDataParallel : public nn::Module {
 public:
  // Shards `module` (auto-wrapping descendants by options.auto_wrap_policy; descendants already
  // wrapped by hand keep their own units). Every rank must call this with the same model.
  static std::shared_ptr<FullyShardedDataParallel> wrap(std::shared_ptr<nn::Module> module,
                                                        std::shared_ptr<dist::ProcessGroup> pg,
                                                        FSDPOptions options = {});
  ~FullyShardedDataParallel() override;

  // The wrapped module's forward, with whatever arguments and outputs it has.
  nn::Value forward_args(const nn::Args& args) override;
  const std::shared_ptr<nn::Module>& module() const { return module_; }
  const FSDPOptions& options() const { return options_; }
  dist::ProcessGroup& process_group() const { return *pg_; }

  // Gradient accumulation: inside this scope backward keeps full local gradients and skips
  // communication; the first backward after it reduces everything accumulated.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(FullyShardedDataParallel& m);
    ~NoSyncGuard();
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    FullyShardedDataParallel& m_;
  };
  NoSyncGuard no_sync() { return NoSyncGuard(*this); }
  bool no_sync_active() const;

  // Collective: the optimizer's kind and param group options (optim::describe_settings) must be
  // the same on every rank, else an Error on every rank names the rank, the option, the values.
  // After each step, units whose full parameters persist (ShardOptimizer) gather the updated
  // shards at once (without it: at their next forward); under CPUOffload the step streams.
  //
  // in_backward: the optimizer steps during backward instead, each unit's parameters as soon as
  // its gradients are reduced (PyTorch's _apply_optimizer_in_backward), while earlier units
  // still compute; under CPUOffload each shard and its optimizer state are then read once and
  // written once per step, overlapped with backward. Every backward that reduces gradients is
  // one step (with no_sync, the backward after the guard); `optimizer.step()` then applies
  // nothing, so training code stays unchanged. The gradients are consumed by the time backward
  // returns: clip_grad_norm_ is an error (clipping needs every gradient before any update).
  void register_optimizer(optim::Optimizer& optimizer, OptimizerRegistration how = {});
  bool steps_in_backward() const;

  // Scales gradients so the norm over all ranks' shards is at most max_norm; returns the norm
  // before clipping (the same on every rank; in deterministic mode an exact sum of squares,
  // so the same for every world size too).
  double clip_grad_norm_(double max_norm);

  // State dicts as PyTorch's FSDP makes them; the type chosen here (Full by default) decides
  // what state_dict() returns and what load_state_dict() takes:
  //   Full: whole tensors under the wrapped module's names (collective: call on every rank).
  //   Sharded: each rank's unpadded rows of every parameter with their place in the whole
  //     tensor; loads into any layout whose rows for this rank the dict holds.
  //   Local: each rank's padded shards as named_parameters() shows them; loads only into the
  //     same world size and layout (the trainer's per-rank files).
  // Non-full dicts carry a marker (nn/state_dict.h): loading one under another type, or into a
  // plain module, is an Error naming both kinds. Buffers are whole in every type.
  void set_state_dict_type(StateDictConfig config) { state_dict_config_ = config; }
  const StateDictConfig& state_dict_config() const { return state_dict_config_; }
  // Sets a type for a scope and restores the previous one (PyTorch's state_dict_type context).
  class StateDictTypeGuard {
   public:
    StateDictTypeGuard(FullyShardedDataParallel& m, StateDictConfig config)
        : m_(m), previous_(m.state_dict_config()) {
      m.set_state_dict_type(config);
    }
    ~StateDictTypeGuard() { m_.set_state_dict_type(previous_); }
    StateDictTypeGuard(const StateDictTypeGuard&) = delete;
    StateDictTypeGuard& operator=(const StateDictTypeGuard&) = delete;

   private:
    FullyShardedDataParallel& m_;
    StateDictConfig previous_;
  };
  std::map<std::string, Tensor> state_dict() const override;
  // Collective (call on every rank, each with its dict). All or nothing across ranks: every
  // rank checks its entries (names, shapes, row ranges, the dict's kind), and if any rank's
  // fail, every rank raises naming it before any shard changes. strict: missing or unexpected
  // keys raise.
  nn::IncompatibleKeys load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true) override;

  // The full (unsharded) parameters and buffers under their original names, in the
  // parameters' original dtype; every rank gets a copy (collective: call on all ranks). The
  // same as state_dict() under the Full type.
  std::map<std::string, Tensor> full_state_dict();
  // Loads a full state dict (as saved from full_state_dict or a local model) into the shards.
  void load_full_state_dict(const std::map<std::string, Tensor>& state);
  // `optimizer`'s state (built on this model's named_parameters()) with every tensor
  // unsharded to its parameter's full shape, keyed like full_state_dict; every rank gets a
  // copy (collective).
  std::map<std::string, std::map<std::string, Tensor>> full_optimizer_state_dict(optim::Optimizer& optimizer);

  // Every parameter of this tree as this rank holds it, in unit order (no communication).
  std::vector<ParameterShard> parameter_shards() const;

  // Units in this tree (this one included), in the order their forward first ran.
  int64_t num_units() const;
  // Bytes of the largest unit's gathered parameters (in the compute dtype).
  int64_t largest_unit_bytes() const;
  // Bytes this rank sent in the collectives of every group this tree's units use.
  int64_t bytes_sent() const;
  // Waits for all-gathers still in flight (ShardOptimizer's after the step).
  void wait_for_pending_gathers();
  // Every unit of this tree as its plan lays it out on this rank (cost_model.h's input).
  std::vector<UnitLayout> unit_layouts() const;
  // Whether DistributedDataParallel built this engine (its units are gradient buckets).
  bool built_as_ddp() const { return built_as_ddp_; }
  // Traffic, copies and waits of this tree since construction or the last reset (this rank).
  FSDPStats stats() const;
  void reset_stats();

 private:
  FullyShardedDataParallel(std::shared_ptr<nn::Module> module, std::shared_ptr<dist::ProcessGroup> pg,
                           FSDPOptions options);
  friend class DistributedDataParallel;
  using OwnedParams = detail::OwnedParams;
  void build_units();
  void prepare_for_units();  // checks across ranks, sync_module_states, buffer dtype
  void adopt(FullyShardedDataParallel& nested, const std::string& name, OwnedParams& owned);
  static void note_owned(const detail::FlatParamUnit& u, OwnedParams& owned);
  // DDP's units: parameters in reverse registration order (roughly the order their gradients
  // become ready), cut into buckets of at most bucket_bytes, all hooked on this wrapper.
  // option_lines describe DDP's options for the check across ranks.
  void build_buckets(int64_t bucket_bytes, const std::vector<std::string>& option_lines);
  void check_units_across_ranks();
  // Every module of the wrapped tree answers through owner_ when reached directly
  // (src/fsdp/wrapped_module_owner.h).
  void take_ownership(const std::string& description);
  void refuse_steps_between_micro_batches();  // deterministic mode: named on every optimizer's step
  void sync_module_states();  // rank 0's parameters and buffers to every rank, in place
  detail::ShardingPlan plan_for(const nn::Module& m);
  double clip_grad_norm_exact(double max_norm);
  // The unit and the index of the parameter whose local shard is `shard` (throws if no unit of
  // this tree has it).
  std::pair<detail::FlatParamUnit*, size_t> find_slot(const Tensor& shard) const;

  std::map<std::string, Tensor> gather_state_dict(bool rank0_only);
  std::map<std::string, Tensor> shard_state_dict(StateDictType type, bool copy) const;
  nn::IncompatibleKeys load_state(const std::map<std::string, Tensor>& state, StateDictType type, bool strict);

  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<dist::ProcessGroup> pg_;
  FSDPOptions options_;
  StateDictConfig state_dict_config_;
  std::shared_ptr<detail::TreeState> tree_;
  std::vector<std::unique_ptr<detail::FlatParamUnit>> units_;  // units this wrapper created
  std::vector<std::shared_ptr<detail::TreeState>> adopted_;    // trees of hand-wrapped descendants
  std::shared_ptr<detail::WrappedModuleOwner> owner_;
  bool built_as_ddp_ = false;
};

// The model a whole-model operation (`what`: a checkpoint save or load, an export) acts on when
// handed `m`: `m` itself, or, when `m` is a module that FullyShardedDataParallel or
// DistributedDataParallel wrapped (reached through a pointer kept from before the wrap), the
// wrapper's engine, so the operation sees whole tensors and not this rank's shards. A module
// inside a wrapped tree, or one whose wrapper was destroyed, is an Error naming it and the fix.
nn::Module& whole_model_of(nn::Module& m, const std::string& what);

}  // namespace strider::fsdp
