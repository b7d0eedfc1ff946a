#pragma once
// FlatParamUnit: the parameters of one FSDP unit, their local shards, and the steps of a
// training iteration (gather, free, reduce gradients) attached to one module through forward
// hooks and autograd hooks. Its ShardingPlan decides which steps run: the unit never looks at
// the strategy itself.
//
// Where everything sits is the unit's FlatLayout (strider/fsdp/flat_layout.h: the shard group's
// split of each parameter along dim 0). The shards of a unit are views, in each parameter's own
// memory format, into one flat shard buffer (this rank's all-gather input and reduce-scatter
// output, so neither needs a copy); the gathered parameters are views into one unsharded buffer,
// parameter after parameter, each with its original shape and strides.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fsdp/gradient_codec.h"
#include "fsdp/sharding_plan.h"
#include "fsdp/tree_state.h"
#include "strider/fsdp/flat_layout.h"
#include "strider/core/tensor.h"
#include "strider/nn/module.h"

namespace strider::fsdp::detail {

// Another registry slot holding the same parameter (a tied weight: head.weight = emb.weight).
struct ParamAlias {
  nn::Module* owner;
  std::string name, full_name;
};

// One parameter of a unit (its place in the flat buffers is the unit's layout()[i]).
struct ParamSlot {
  nn::Module* owner;
  std::string name;       // in owner
  std::string full_name;  // from the FSDP root, for messages
  DimVector strides;      // the parameter's own, which the gathered parameter keeps
  MemoryFormat format;    // its dense format, which the shard keeps
  bool requires_grad;
  Tensor shard;           // the local shard (what named_parameters() shows between steps)
  Tensor full;            // the gathered parameter (storage freed while sharded)
  std::vector<ParamAlias> aliases;  // its other slots, which always show what this one shows

  // Puts `t` in every registry slot of the parameter, so tied slots stay one tensor.
  void show(const Tensor& t) const;
  bool held_by(const nn::Module& m) const;  // some slot of the parameter is in m
};

class FlatParamUnit {
 public:
  struct ParamRef {
    nn::Module* owner;
    std::string name, full_name;
    std::vector<ParamAlias> aliases;
  };
  // Shards the parameters as `plan` says (each rank keeps its rows) and hooks `module`'s forward.
  FlatParamUnit(TreeState& tree, nn::Module& module, std::vector<ParamRef> params, ShardingPlan plan);
  ~FlatParamUnit();
  FlatParamUnit(const FlatParamUnit&) = delete;
  FlatParamUnit& operator=(const FlatParamUnit&) = delete;

  void set_tree(TreeState& tree) { tree_ = &tree; }
  const std::vector<ParamSlot>& params() const { return params_; }
  std::vector<ParamSlot>& params() { return params_; }
  // Where the parameters sit in the flat buffers, split over the plan's shard group (NoShard:
  // one rank, the gradient buffer's layout).
  const FlatLayout& layout() const { return layout_; }
  // The rows of the whole parameter i this rank's shard holds (padding not counted).
  RowRange own_rows(size_t i) const { return layout_[i].rows_of(plan_.shard_rank()); }
  int64_t gathered_bytes() const { return layout_.full_numel() * static_cast<int64_t>(element_size(compute_dtype_)); }
  const std::string& name() const { return name_; }
  const ShardingPlan& plan() const { return plan_; }
  ScalarType dtype() const { return dtype_; }
  ScalarType compute_dtype() const { return compute_dtype_; }  // the gathered parameters' (mixed precision)

  // Starts gathering (no-op when gathered or in flight).
  void gather_async();
  // Gathers (waiting on an earlier gather_async) and makes the module use full parameters.
  void use_full_params();
  void use_shards();
  // Mixed precision without flat buffers: the registry shows compute-dtype casts of the parameters.
  void use_cast_params();
  // Frees the gathered parameters (unless the plan keeps them).
  void reshard();
  bool is_gathered() const { return state_ == State::Gathered; }
  // The module the unit's hooks are on (it gathers the unit when called).
  const nn::Module& module() const { return module_; }
  // Whether `owner`'s parameters of this unit are whole in its registry now, so a call of it
  // outside the unit's own forward computes with them (waits for a gather already in flight).
  bool params_in_place(const nn::Module& owner);
  // After the optimizer step: starts gathering updated shards into persistent full parameters.
  void refresh_full_params();
  // After a load wrote the shards: persistent full parameters gather again before their next
  // use. Every rank calls it, also one whose shard holds only padding and so was not written:
  // whether to gather is decided on each rank and must agree.
  void mark_shards_loaded() {
    if (shard_flat_.defined()) shard_flat_.storage()->bump_version();
  }
  // `value`, shaped like parameter i's shard (optimizer state, say), gathered over the shard
  // group into a contiguous tensor of the parameter's full shape (collective in the shard group).
  Tensor gather_full(size_t i, const Tensor& value) const;

  // Called by the engine's final callback, in two passes over the units: first every unit
  // launches what is still pending and, once its reduce-scatter is done, the all-reduce across
  // replicas (if settling did not launch it already); then each waits and hands the local
  // shards their gradients.
  void finish_reduce_scatter();
  void finish_backward();
  // Offload: once the optimizer consumed the gradients (nothing else holds them), hand their
  // pages back to the system.
  void release_consumed_grads();

 private:
  enum class State { Sharded, Gathering, Gathered };
  // Construction, in order: the slots and the layout; the flat buffers; each parameter's shard
  // (materialized or copied) and gathered view in place of the module's tensor; the hooks.
  void describe_params(const std::vector<ParamRef>& refs);
  void check_param(const Tensor& p, const std::string& full_name) const;
  void allocate_flat_buffers();
  void place_params();
  Tensor place_param(size_t i);  // returns the tensor the module held before
  void install_forward_hooks();
  std::optional<nn::Args> cast_root_inputs(const nn::Args& args) const;
  void pre_forward();
  // Reshards if no gradient will flow back; otherwise hooks pre_backward onto every output
  // tensor that requires grad (one node over all of them, so it runs once).
  nn::Value post_forward(const nn::Value& output);
  void pre_backward();
  // Gradients. When the codec reduces them where they accumulate (grads_in_place_), the unit's
  // gradient buffer is laid out like the gathered parameters and, from the unit's first
  // gradient of a backward on, each parameter's gradient accumulates in its view there
  // (autograd/grad_buffer.h: the backward copies or adds into it, no gradient is made twice);
  // the reduce-scatter reads it by the layout's pieces. Otherwise each gradient is packed into
  // the codec's rank-major wire as it arrives (a cast, or deterministic mode).
  ScalarType grad_dtype() const;   // the dtype gradients arrive in: the gathered parameters'
  Tensor grad_view(size_t i) const;  // parameter i in the gradient buffer
  void prepare_grad_buffer();      // the buffer (if none), and the parameters' views into it
  void take_grad_in_place(size_t i);  // parameter i's gradient into the buffer
  void pack_grad(size_t i);
  void hand_over_grad(size_t i);  // parameter i's gradient into the wire (or left in the buffer); it keeps none
  void release_grad_buffer();      // at launch: zeros where no gradient came, views dropped
  void on_grad_ready(size_t i);
  void launch_reduce();
  // Starts the all-reduce (over the world) of which parameters some rank's backward (or no_sync
  // backwards since the last reduction) reached: one that none reached keeps the gradient it
  // had (none after zero_grad), as in one process; one that only some ranks reached gets their
  // gradients averaged with zeros.
  void launch_reached();
  // Waits for the launched reduction and turns what arrived into this rank's chunk (once);
  // hybrid: then launches the chunk's all-reduce across replicas.
  void settle_reduce();
  void launch_replica_reduce();  // once per reduction (the order is the settling order, alike on every rank)
  // Hands the reduced gradients to the shards (once per reduction) and, when an optimizer
  // steps in backward, has it update them.
  void deliver_gradients();
  // A gradient-sized buffer: the offload tier's reused one when it fits, else fresh memory.
  Tensor gradient_buffer(ScalarType dtype, int64_t numel);
  // Starts gathering the next unit in `direction` of the forward order, unless
  // limit_all_gathers units are already gathered ahead of use.
  void prefetch(int direction);
  // This unit is needed now (its forward or backward starts, or it is freed): it no longer counts
  // among the units gathered ahead of use.
  void in_use();
  // Offload: starts reading the shards of the units after this one in `direction` of the
  // forward order, up to CPUOffload::read_ahead_bytes not yet used.
  void read_ahead_shards(int direction);
  // Offload: whether this unit is among the last in forward whose shards fit the read-ahead
  // budget together, so its shard stays in memory for the backward that starts with them.
  bool needed_early_in_backward() const;
  bool accumulating() const;  // some shard already holds a gradient (no zero_grad since)
  Tensor offload_grad_buffer();
  bool is_root() const { return tree_->root == this; }
  bool shards_changed() const { return plan_.gathers_after_step() && shard_flat_.storage()->version() != gathered_version_; }

  TreeState* tree_;
  nn::Module& module_;
  std::string name_;
  ShardingPlan plan_;
  std::unique_ptr<GradientCodec> codec_;  // how gradients travel (averaged, or summed exactly)
  std::vector<ParamSlot> params_;
  FlatLayout layout_;
  ScalarType dtype_, compute_dtype_;
  Tensor shard_flat_;     // this rank's shards, back to back
  Tensor full_flat_;      // all gathered parameters
  Tensor send_;           // shard_flat_ cast to the compute dtype while a gather is in flight
  Tensor grad_flat_;      // gradients to reduce: laid out like full_flat_ (in place) or the codec's wire
  Tensor reduced_;        // this rank's reduced chunk
  Tensor offload_grads_;  // offload: the shards' gradients, one flat buffer reused every step
  std::shared_ptr<dist::Work> gather_work_, reduce_work_, replica_work_;
  uint64_t gathered_version_ = 0;  // shard_flat_'s version when the full parameters were gathered
  State state_ = State::Sharded;
  bool prefetched_ = false;
  bool shard_read_ahead_ = false;  // its offloaded shard is being read ahead of its gather
  bool state_read_ahead_ = false;  // its optimizer state is being read ahead of its update in backward
  bool in_backward_ = false;
  bool grads_in_place_ = false;   // gradients accumulate in grad_flat_, which is reduced as it is
  bool reduce_launched_ = false;  // this backward's gradients are on their way
  bool settled_ = false;          // reduced_ is this rank's chunk (the reduction is done)
  bool replica_launched_ = false;  // its all-reduce across replicas is on its way
  bool reduced_this_backward_ = false;  // launched since this backward began (a later gradient is an error)
  // A tied parameter's gradient may arrive in parts (a use inside an activation checkpoint
  // arrives in its recomputation's own backward): its unit reduces at the end of backward.
  bool reduce_at_end_ = false;
  int grads_ready_ = 0, grads_expected_ = 0;
  std::vector<char> grad_seen_;
  std::vector<char> accumulated_;        // reached by a backward under no_sync since the last reduction
  Tensor reached_;                       // launch_reached's [params] mask, 1 where reached
  std::shared_ptr<dist::Work> reached_work_;
  std::vector<char> reached_anywhere_;   // over this step's reductions (deterministic micro-batches)
  int pre_hook_ = -1, post_hook_ = -1;
};

}  // namespace strider::fsdp::detail
