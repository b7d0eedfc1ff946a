#pragma once
// Optimizers keep per-parameter state keyed by parameter name, so a sharded optimizer or a
// checkpoint can address it by name. Steps run without recording a graph and update the
// parameters in place (their layout, channels-last included, is kept).
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "strider/core/tensor.h"

namespace strider::optim {

using NamedParameters = std::vector<std::pair<std::string, Tensor>>;
using OptimizerState = std::map<std::string, std::map<std::string, Tensor>>;

class Optimizer {
 public:
  explicit Optimizer(NamedParameters params, double lr);
  virtual ~Optimizer() = default;
  // The step pre-hooks in order, begin_step(), one update of every parameter with a gradient
  // (between its update hooks), then the step post-hooks in order. While another component
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
  // "sgd", "adam", "adamw": what a checkpoint records, so a resume cannot mix optimizers.
  virtual std::string name() const = 0;
  // The state tensors each parameter gets once it has stepped ({} for plain SGD).
  virtual std::vector<std::string> state_keys() const = 0;
  // Drops gradients (set to none, as PyTorch 2.x does by default).
  void zero_grad();
  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  const NamedParameters& params() const { return params_; }
  // Replaces the parameter tensors (same names), e.g. after FSDP re-sharding or offload.
  void set_params(NamedParameters params);
  // name -> state tensors ("momentum_buffer", "exp_avg", "exp_avg_sq", ...) and the step count.
  std::map<std::string, std::map<std::string, Tensor>>& state() { return state_; }
  const OptimizerState& state() const { return state_; }
  int64_t step_count() const { return steps_; }
  void set_step_count(int64_t s) { steps_ = s; }
  // Replaces the state and step count, all or nothing: every entry names a parameter, has
  // exactly state_keys(), each its parameter's shape and dtype with finite values; once
  // step_count > 0 every parameter that requires grad has an entry. Otherwise throws naming
  // the tensor, and the optimizer is unchanged. `what` names the source in messages.
  void load_state(const OptimizerState& state, int64_t step_count, const std::string& what);
  // Throws naming the first parameter whose tensor was retired (core/storage.h: its values
  // moved, as into FSDP's shards) and why; step() and begin_partial_step() call it first.
  void check_params_alive() const;

 protected:
  // Once per step, before any parameter (the step count and what follows from it).
  virtual void begin_step() { ++steps_; }
  // One parameter, which has a gradient; `state` is its entry of state().
  virtual void update(const std::string& name, Tensor& param, std::map<std::string, Tensor>& state) = 0;
  NamedParameters params_;
  double lr_;
  int64_t steps_ = 0;
  OptimizerState state_;

 private:
  std::map<int, std::function<void()>> pre_hooks_, post_hooks_;
  std::map<int, ParamUpdateHooks> param_hooks_;
  int next_hook_ = 0;
  std::string stepped_by_;
  std::shared_ptr<const void> alive_ = std::make_shared<int>(0);
};

struct SGDOptions {
  double lr = 0.01, momentum = 0.0, dampening = 0.0, weight_decay = 0.0;
  bool nesterov = false;
};

class SGD : public Optimizer {
 public:
  SGD(NamedParameters params, SGDOptions options);
  std::string name() const override { return "sgd"; }
  std::vector<std::string> state_keys() const override;

 protected:
  void update(const std::string& name, Tensor& param, std::map<std::string, Tensor>& state) override;

 private:
  SGDOptions o_;
};

struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  bool decoupled_weight_decay = false;  // true: AdamW
};

class Adam : public Optimizer {
 public:
  Adam(NamedParameters params, AdamOptions options);
  std::string name() const override { return o_.decoupled_weight_decay ? "adamw" : "adam"; }
  std::vector<std::string> state_keys() const override { return {"exp_avg", "exp_avg_sq"}; }

 protected:
  void begin_step() override;
  void update(const std::string& name, Tensor& param, std::map<std::string, Tensor>& state) override;

 private:
  AdamOptions o_;
  double bias_correction1_ = 1, bias_correction2_ = 1;  // 1 - beta^step of this step
};

class AdamW : public Adam {
 public:
  AdamW(NamedParameters params, AdamOptions options);
};

}  // namespace strider::optim
