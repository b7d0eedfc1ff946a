#pragma once
// Learning-rate schedules over every param group, with PyTorch's protocol: constructing one takes
// its initial step (step 0, as step() would set it: StepLR keeps the current lr, the others set
// lr_at(0, group)); call step() after each optimizer.step(), once per epoch (StepLR) or per
// iteration (CosineWithWarmup, OneCycleLR). Each group's base lr is its initial_lr (PyTorch's
// group["initial_lr"]): the first scheduler built on an optimizer records each group's lr there,
// later ones start from it. step() moves each lr as PyTorch's step() does: StepLR is chainable
// (it scales the group's current lr, so it composes with another scheduler or an lr set by
// hand), the others compute the step's value from the base. set_last_step uses every schedule's
// closed form (PyTorch's step(epoch)), so a resumed run only needs last_step(); a chain or an lr
// set by hand is not what it restores (checkpoints keep the step, not each group's lr).
// LambdaLR and OneCycleLR are in their own headers.
#include <cstdint>
#include <vector>

#include "strider/optim/optimizer.h"

namespace strider::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& opt);
  virtual ~LRScheduler() = default;
  // The next step: every group's lr (and what else the schedule sets) becomes that step's.
  void step();
  // Group `group`'s lr at `step` (the closed form).
  virtual double lr_at(int64_t step, size_t group) const = 0;
  // What step() sets group `group`'s lr to at `step` when it is `current` now (PyTorch's
  // get_lr()): lr_at unless the schedule is chainable.
  virtual double next_lr(int64_t step, size_t group, double current) const;
  int64_t last_step() const { return last_step_; }
  // Resumes at `step` (a checkpoint's): the optimizer gets step's values, as if stepped there.
  void set_last_step(int64_t step);
  // The lr of every group that the last step (or construction) set (PyTorch's get_last_lr()).
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }

 protected:
  // Sets step's values on the optimizer (`chained`: the lrs from next_lr, else from lr_at).
  virtual void apply(int64_t step, bool chained);
  // Each scheduler's constructor calls it last: step 0 as PyTorch's constructor takes it.
  void initial_step() { advance(0, /*chained=*/true); }
  Optimizer& opt_;
  std::vector<double> base_lrs_;

 private:
  void advance(int64_t step, bool chained);
  int64_t last_step_ = 0;
  std::vector<double> last_lr_;
};

// torch.optim.lr_scheduler.StepLR: step() multiplies the lr by gamma every step_size steps;
// closed form lr = base * gamma^floor(step / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& opt, int64_t step_size, double gamma = 0.1);
  double lr_at(int64_t step, size_t group) const override;
  double next_lr(int64_t step, size_t group, double current) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// Strider's warmup schedule (no PyTorch counterpart of this name): linear warmup that reaches
// base / warmup at step 0 (not 0: the first step trains) and base at step warmup - 1, i.e.
// lr = base * (step + 1) / warmup for step < warmup; then cosine decay from base at step
// `warmup` to min_lr at step `total` (held after). min_lr is the same for every group.
class CosineWithWarmup : public LRScheduler {
 public:
  CosineWithWarmup(Optimizer& opt, int64_t warmup, int64_t total, double min_lr = 0.0);
  double lr_at(int64_t step, size_t group) const override;

 private:
  int64_t warmup_, total_;
  double min_lr_;
};

}  // namespace strider::optim
