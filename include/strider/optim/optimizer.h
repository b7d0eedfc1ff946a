#pragma once
// The optimizer base: parameters in groups (PyTorch's param_groups, optim/param_group.h), state
// per parameter keyed by parameter name (so a sharded optimizer or a checkpoint can address it by
// name), a step count per parameter as PyTorch keeps it, and hooks around the step. Steps run
// without recording a graph and update the parameters in place (their layout, channels-last
// included, is kept). The optimizers are in optim/sgd.h and optim/adam.h; optim/make_optimizer.h
// builds one by name.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "strider/core/tensor.h"
#include "strider/optim/optimizer_state_dict.h"
#include "strider/optim/param_group.h"

namespace strider::optim {

using OptimizerState = std::map<std::string, std::map<std::string, Tensor>>;

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // The step pre-hooks in order, begin_step(), one update of every parameter with a gradient
  // (between its update hooks), then the step post-hooks in order. A parameter's state follows
  // the parameter: state of another dtype than state_dtype(param) (the module was converted,
  // Module::to(kDouble), after the optimizer was built) is converted to it before the update, as
  // PyTorch's load_state_dict casts; state of another shape is an Error naming it. While another component
  // applies the updates (set_stepped_by), it applies nothing: it only checks that no parameter
  // holds a gradient that component left behind.
  void step();
  // The same step in parts, for a caller that updates each parameter as soon as its gradient is
  // final (FSDP's optimizer in backward): begin_partial_step() runs the pre-hooks and
  // begin_step(), update_parameter(i) parameter i (which has a gradient) between its update
  // hooks, end_partial_step() the post-hooks.
  void begin_partial_step();
  void update_parameter(size_t index);
  void end_partial_step();
  // Names the component that applies this optimizer's updates from now on ("" gives them back
  // to step()); messages name it.
  void set_stepped_by(std::string by) { stepped_by_ = std::move(by); }
  const std::string& stepped_by() const { return stepped_by_; }
  // Expires when the optimizer is destroyed (a component holding a reference checks it).
  std::weak_ptr<const void> lifetime() const { return alive_; }
  // Runs before every step (a check that the gradients are complete; throwing stops the step
  // before any parameter changes); returns a handle for remove_step_hook.
  int register_step_pre_hook(std::function<void()> hook);
  // Runs after every step (a sharding plan all-gathers the updated shards here); returns a
  // handle for remove_step_hook.
  int register_step_post_hook(std::function<void()> hook);
  // Run around each parameter's update, in params() order, for those with a gradient, with the
  // parameter's index (an offload tier reads the next parameters' state ahead and writes this
  // one's back while the next one steps); returns a handle for remove_step_hook.
  struct ParamUpdateHooks {
    std::function<void(size_t index)> before, after;
  };
  int register_param_update_hooks(ParamUpdateHooks hooks);
  void remove_step_hook(int handle);
  // "sgd", "adam", "adamw" (optimizer_names()): what a checkpoint records, so a resume cannot
  // mix optimizers.
  virtual std::string name() const = 0;
  // The state tensors a parameter of group `group` gets once it has stepped ({} for SGD
  // without momentum).
  virtual std::vector<std::string> state_keys(size_t group) const = 0;
  // Those of every group together.
  std::vector<std::string> state_keys() const;
  // Drops gradients (set to none, as PyTorch 2.x does by default; 1.13 zeroed them).
  void zero_grad();

  // Parameter groups. params() lists every group's parameters, group after group (indices stay
  // valid: groups are only ever appended).
  size_t num_param_groups() const { return group_params_.size(); }
  // Group g's parameters and every option the optimizer has.
  ParamGroup param_group(size_t g) const;
  std::vector<ParamGroup> param_groups() const;
  // Group g's options alone (every option the optimizer has, set).
  GroupOptions param_group_options(size_t g) const;
  // Sets the options `changes` sets for group g, checked as at construction; throws naming the
  // option, and the group is unchanged.
  void set_group_options(size_t g, const GroupOptions& changes);
  // The same without checking the values (an option the optimizer lacks is still an Error), as
  // PyTorch's schedulers assign group["lr"] and group["momentum"]: OneCycleLR's linear schedule
  // ends one step past its last, with an lr below zero that no optimizer step uses.
  void assign_group_options(size_t g, const GroupOptions& changes);
  // Appends a group (PyTorch's add_param_group): options it leaves unset take the values the
  // optimizer was built with. Its parameters must be new to the optimizer.
  void add_param_group(ParamGroup group);
  // The group params()[index] belongs to.
  size_t group_of(size_t index) const;
  double lr(size_t group = 0) const;
  // Assigns group lrs (assign_group_options).
  void set_lr(double lr);  // every group's
  void set_lr(size_t group, double lr);
  // A scheduler's base lr of the group (PyTorch's group["initial_lr"]): the first scheduler
  // built on the optimizer sets it, later ones read it.
  std::optional<double> initial_lr(size_t group) const;
  void set_initial_lr(size_t group, double lr);

  const NamedParameters& params() const { return params_; }
  // The dtype a parameter's state tensors are kept in: the parameter's own (PyTorch's), unless the
  // optimizer is set otherwise (AdamOptions::state_dtype). Loading casts or checks against it.
  virtual ScalarType state_dtype(const Tensor& param) const { return param.dtype(); }
  // Where params()[index] starts within the whole parameter it is a piece of, in elements: a
  // sharded parameter's first row times its row size (FSDP's register_optimizer sets it), else 0.
  // Stochastically rounded state is keyed by it, so its bits do not depend on the split.
  int64_t element_offset(size_t index) const;
  void set_element_offset(size_t index, int64_t offset);
  // Replaces the parameter tensors (same names in the same order), e.g. after FSDP re-sharding.
  void set_params(NamedParameters params);
  // name -> state tensors ("momentum_buffer", "exp_avg", "exp_avg_sq", ...).
  std::map<std::string, std::map<std::string, Tensor>>& state() { return state_; }
  const OptimizerState& state() const { return state_; }
  // Calls of step() (or partial steps begun).
  int64_t step_count() const { return steps_; }
  void set_step_count(int64_t s) { steps_ = s; }
  // Updates parameter `index` has had (PyTorch's state["step"]): a parameter without a gradient
  // in a step, or added later, has fewer than step_count(). Adam's bias correction uses it.
  int64_t param_step(size_t index) const { return param_steps_.at(index); }
  // By name, the parameters whose count differs from step_count() (what a checkpoint records).
  std::map<std::string, int64_t> param_steps_differing() const;
  // Replaces the state and step counts, all or nothing: every entry names a parameter and has
  // exactly its group's state_keys(), each its parameter's shape and state_dtype() with finite values.
  // A parameter's step count is `param_steps[name]` if listed, else step_count (0 for one
  // without state that does not require grad); a parameter with a nonzero count needs state (if
  // its group keeps any), one with count 0 must have none. Otherwise throws naming the tensor,
  // and the optimizer is unchanged. `what` names the source in messages.
  void load_state(const OptimizerState& state, int64_t step_count, const std::string& what,
                  const std::map<std::string, int64_t>& param_steps = {});
  // PyTorch's layout (optim/optimizer_state_dict.h). load_state_dict needs the same number of
  // groups with the same number of parameters each, takes the groups' options (as PyTorch
  // does, initial_lr too) and casts state to its state_dtype() (PyTorch: the parameter's); all or nothing.
  // step_count() becomes the largest parameter step (SGD, whose PyTorch state has no step,
  // keeps its count; a parameter with state counts it).
  OptimizerStateDict state_dict() const;
  void load_state_dict(const OptimizerStateDict& dict, const std::string& what = "the optimizer state dict");
  // Everything load_state and load_state_dict replace, to put back after a failed load
  // elsewhere (a checkpoint load that another rank failed).
  struct Snapshot {
    OptimizerState state;
    int64_t steps = 0;
    std::vector<int64_t> param_steps;
  };
  Snapshot snapshot() const { return {state_, steps_, param_steps_}; }
  void restore(Snapshot s);
  // Throws naming the first parameter whose tensor was retired (core/storage.h: its values
  // moved, as into FSDP's shards) and why; step() and begin_partial_step() call it first.
  void check_params_alive() const;

 protected:
  Optimizer() = default;
  // For the constructors: adds the groups (add_param_group) and checks that there is a parameter.
  void add_param_groups(std::vector<ParamGroup> groups);
  // What the optimizer is called in messages ("SGD", "AdamW").
  virtual const char* display_name() const = 0;
  // Group g's options, every one the optimizer has set.
  virtual GroupOptions group_options(size_t g) const = 0;
  // Appends a group's options: the optimizer's own with `overrides` applied; throws on an option
  // it does not have or an invalid value, before changing anything. `where` names the group.
  virtual void append_group_options(const GroupOptions& overrides, const std::string& where) = 0;
  // Group g's options with `changes` applied; the same checks of the values if `check`.
  virtual void change_group_options(size_t g, const GroupOptions& changes, const std::string& where, bool check) = 0;
  // Whether PyTorch's state for this optimizer holds "step" (Adam does, SGD does not).
  virtual bool keeps_step_state() const { return false; }
  // Once per step, before any parameter.
  virtual void begin_step() { ++steps_; }
  // Parameter `index`, which has a gradient and whose param_step() already counts this update;
  // `state` is its entry of state().
  virtual void update(size_t index, Tensor& param, std::map<std::string, Tensor>& state) = 0;

  NamedParameters params_;
  int64_t steps_ = 0;
  OptimizerState state_;

 private:
  // Converts parameter `name`'s state to state_dtype(p); throws if a tensor's shape is not p's.
  void follow_parameter(const std::string& name, const Tensor& p, std::map<std::string, Tensor>& state) const;
  std::vector<std::vector<size_t>> group_params_;  // indices into params_
  std::vector<size_t> group_of_;                   // per parameter
  std::vector<std::optional<double>> initial_lr_;  // per group
  std::vector<int64_t> param_steps_;               // per parameter
  std::vector<int64_t> element_offsets_;           // per parameter (missing: 0)
  std::map<int, std::function<void()>> pre_hooks_, post_hooks_;
  std::map<int, ParamUpdateHooks> param_hooks_;
  int next_hook_ = 0;
  std::string stepped_by_;
  std::shared_ptr<const void> alive_ = std::make_shared<int>(0);
};

}  // namespace strider::optim
