#pragma once
// Stochastic gradient descent with momentum, as torch.optim.SGD (PyTorch 1.13), per group:
//   d = (maximize ? -grad : grad) + weight_decay * p
//   buf = d on the first step, else momentum * buf + (1 - dampening) * d
//   d = nesterov ? d + momentum * buf : buf          (with momentum != 0)
//   p -= lr * d
// State: "momentum_buffer" once a parameter of a group with momentum has stepped.
#include <limits>
#include <vector>

#include "strider/optim/optimizer.h"

namespace strider::optim {

struct SGDOptions {
  // No default: PyTorch 1.13's SGD requires lr too (SGD([...]) without one is an Error, unless
  // every param group sets its own).
  double lr = std::numeric_limits<double>::quiet_NaN();
  double momentum = 0.0, dampening = 0.0, weight_decay = 0.0;
  bool nesterov = false, maximize = false;
};

class SGD : public Optimizer {
 public:
  SGD(NamedParameters params, SGDOptions options);
  SGD(std::vector<ParamGroup> groups, SGDOptions options);
  std::string name() const override { return "sgd"; }
  std::vector<std::string> state_keys(size_t group) const override;
  using Optimizer::state_keys;
  const SGDOptions& options(size_t group) const { return groups_.at(group); }

 protected:
  const char* display_name() const override { return "SGD"; }
  GroupOptions group_options(size_t g) const override;
  void append_group_options(const GroupOptions& overrides, const std::string& where) override;
  void change_group_options(size_t g, const GroupOptions& changes, const std::string& where, bool check) override;
  void update(size_t index, Tensor& param, std::map<std::string, Tensor>& state) override;

 private:
  SGDOptions defaults_;
  std::vector<SGDOptions> groups_;
};

}  // namespace strider::optim
