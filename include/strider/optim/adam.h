#pragma once
// Adam and AdamW, as torch.optim.Adam and torch.optim.AdamW (PyTorch 1.13), per group, with each
// parameter's own step count t (Optimizer::param_step):
//   g = maximize ? -grad : grad
//   Adam:  g += weight_decay * p          AdamW: p *= 1 - lr * weight_decay
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//   v_max = max(v_max, v) with amsgrad (used for v below)
//   p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// State: "exp_avg", "exp_avg_sq" (and "max_exp_avg_sq" with amsgrad). The two differ only in
// weight_decay's default (0 for Adam, 0.01 for AdamW, as PyTorch) and in how it decays.
//
// state_dtype = kBFloat16 keeps exp_avg and exp_avg_sq in bfloat16 (2 bytes each per parameter
// element instead of 4; float32 parameters, amsgrad off): each step computes in float32 and
// rounds the moments stochastically (kernels/adam.h says why not to nearest), keyed by the
// parameter's name, its step and the element's place in the whole parameter, so a run is
// reproducible and does not depend on thread count or sharding. Not PyTorch's arithmetic: the
// moments carry 8 significant bits; the loss follows float32 state closely (tests/optim).
#include <optional>
#include <vector>

#include "strider/optim/optimizer.h"

namespace strider::optim {

struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  bool amsgrad = false, maximize = false;
  // true: decay as AdamW (PyTorch 2.x's Adam has the same switch); prefer AdamW.
  bool decoupled_weight_decay = false;
  // The moments' dtype for every group: unset = the parameter's (PyTorch), or kBFloat16 (float32
  // parameters only). Sharded parameters (FSDP) need the model's register_optimizer, which tells
  // the optimizer where each shard starts in its parameter (Optimizer::set_element_offset).
  std::optional<ScalarType> state_dtype = std::nullopt;
};

struct AdamWOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 1e-2;
  bool amsgrad = false, maximize = false;
  std::optional<ScalarType> state_dtype = std::nullopt;  // as AdamOptions::state_dtype
};

class Adam : public Optimizer {
 public:
  Adam(NamedParameters params, AdamOptions options = {});
  Adam(std::vector<ParamGroup> groups, AdamOptions options = {});
  std::string name() const override { return defaults_.decoupled_weight_decay ? "adamw" : "adam"; }
  std::vector<std::string> state_keys(size_t group) const override;
  using Optimizer::state_keys;
  const AdamOptions& options(size_t group) const { return groups_.at(group); }
  ScalarType state_dtype(const Tensor& param) const override;

 protected:
  const char* display_name() const override { return defaults_.decoupled_weight_decay ? "AdamW" : "Adam"; }
  GroupOptions group_options(size_t g) const override;
  void append_group_options(const GroupOptions& overrides, const std::string& where) override;
  void change_group_options(size_t g, const GroupOptions& changes, const std::string& where, bool check) override;
  bool keeps_step_state() const override { return true; }
  void update(size_t index, Tensor& param, std::map<std::string, Tensor>& state) override;

 private:
  void update_bfloat16_state(size_t index, Tensor& p, const Tensor& grad, std::map<std::string, Tensor>& st,
                             const AdamOptions& o, double bc1, double bc2);
  void check_state_dtype(const std::string& name, const Tensor& p) const;

  AdamOptions defaults_;
  std::vector<AdamOptions> groups_;
};

class AdamW : public Adam {
 public:
  AdamW(NamedParameters params, AdamWOptions options = {});
  AdamW(std::vector<ParamGroup> groups, AdamWOptions options = {});
};

}  // namespace strider::optim
