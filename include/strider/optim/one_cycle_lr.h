#pragma once
// torch.optim.lr_scheduler.OneCycleLR (PyTorch 1.13), step for step the same values. Per group:
// initial_lr = max_lr / div_factor, min_lr = initial_lr / final_div_factor. Two phases: lr
// initial -> max over the first pct_start * total_steps steps, then max -> min_lr; with
// three_phase: initial -> max, max -> initial (same length), then initial -> min_lr. Each phase
// anneals by cosine or linearly (anneal_strategy). With cycle_momentum the group's momentum
// (SGD) or beta1 (Adam, AdamW) moves inversely, max_momentum -> base_momentum -> max_momentum,
// and is set on the optimizer each step. Call step() once per batch; stepping past total_steps
// is an Error, as in PyTorch. The constructor overwrites each group's initial_lr (as PyTorch).
#include <string>
#include <vector>

#include "strider/optim/lr_scheduler.h"

namespace strider::optim {

struct OneCycleLROptions {
  std::vector<double> max_lr = {};  // one for all groups, or one per group; required
  int64_t total_steps = 0;     // or epochs * steps_per_epoch
  int64_t epochs = 0, steps_per_epoch = 0;
  double pct_start = 0.3;
  std::string anneal_strategy = "cos";  // "cos" or "linear"
  bool cycle_momentum = true;
  std::vector<double> base_momentum = {0.85}, max_momentum = {0.95};  // one, or one per group
  double div_factor = 25.0, final_div_factor = 1e4;
  bool three_phase = false;
};

class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& opt, OneCycleLROptions options);
  double lr_at(int64_t step, size_t group) const override;
  // Group `group`'s momentum (or beta1) at `step` (cycle_momentum only).
  double momentum_at(int64_t step, size_t group) const;
  int64_t total_steps() const { return total_steps_; }

 protected:
  void apply_extras(int64_t step) override;

 private:
  struct Phase {
    double end_step;
    // Which of a group's values the phase starts and ends at.
    enum Point { Initial, Max, Min } lr_from, lr_to;
    bool momentum_from_max, momentum_to_max;
  };
  struct GroupValues {
    double initial, max, min, max_momentum, base_momentum;
  };
  // Where `step` lies: its phase and the fraction of it done.
  std::pair<const Phase*, double> locate(int64_t step) const;
  double anneal(double from, double to, double pct) const;
  double lr_point(const GroupValues& g, Phase::Point p) const;

  OneCycleLROptions o_;
  int64_t total_steps_;
  std::vector<Phase> phases_;
  std::vector<GroupValues> groups_;
  bool beta1_ = false;  // the momentum is Adam's beta1 (else SGD's momentum)
};

}  // namespace strider::optim
