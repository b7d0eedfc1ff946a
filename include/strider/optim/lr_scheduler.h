#pragma once
// Learning-rate schedules over every param group, with PyTorch's protocol: constructing one takes
// its initial step (step 0, as step() would set it: a chainable one scales the current lr by its
// step-0 factor (StepLR's is 1), the others set lr_at(0, group)); call step() after each
// optimizer.step(), once per epoch (StepLR) or per iteration (CosineWithWarmup, OneCycleLR). Each group's base lr is its initial_lr (PyTorch's
// group["initial_lr"]): the first scheduler built on an optimizer records each group's lr there,
// later ones start from it. step() moves each lr as PyTorch's step() does: the chainable
// schedules (chainable(): StepLR and those of optim/chainable_lr.h) scale the group's current lr,
// so they compose with another scheduler or an lr set by hand; the others compute the step's value
// from the base. set_last_step(step) (what checkpoint::load and the trainer's resume call: a
// checkpoint keeps the step, not each group's lr) gives the lr an uninterrupted run reaches when
// only this scheduler sets it: a chainable schedule replays its recursive form from the base lrs
// (the closed form, PyTorch's step(epoch), differs from it in the last bits), the others use
// their closed form. A chain with another scheduler or an lr set by hand is not what it restores
// (ChainedScheduler and SequentialLR, optim/composed_lr.h, restore their members together).
// LambdaLR, OneCycleLR, the chainable schedules, CosineAnnealingWarmRestarts, SequentialLR and
// ChainedScheduler are in their own headers; ReduceLROnPlateau (optim/reduce_lr_on_plateau.h)
// is not an LRScheduler: its step takes the metric.
#include <cstdint>
#include <vector>

#include "strider/optim/optimizer.h"

namespace strider::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& opt);
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;
  // The next step: every group's lr (and what else the schedule sets) becomes that step's.
  void step();
  // Group `group`'s lr at `step` (the closed form: PyTorch's _get_closed_form_lr, or get_lr()
  // for a schedule without one).
  virtual double lr_at(int64_t step, size_t group) const = 0;
  // What step() sets group `group`'s lr to at `step` when it is `current` now (PyTorch's
  // get_lr()): lr_at unless the schedule is chainable.
  virtual double next_lr(int64_t step, size_t group, double current) const;
  // Whether step() scales the current lr (next_lr uses `current`) rather than setting lr_at.
  virtual bool chainable() const { return false; }
  int64_t last_step() const { return last_step_; }
  // Resumes at `step` (a checkpoint's): the optimizer gets the values an uninterrupted run of
  // this schedule has there (see the top of this header).
  virtual void set_last_step(int64_t step);
  // The lr of every group that the last step (or construction) set (PyTorch's get_last_lr()).
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  // The optimizer whose lrs it sets.
  const Optimizer& optimizer() const { return opt_; }

 protected:
  // Sets step's values on the optimizer (`chained`: the lrs from next_lr, else from lr_at), then
  // apply_extras.
  virtual void apply(int64_t step, bool chained);
  // What else the schedule sets at `step` besides the lr (OneCycleLR's momentum).
  virtual void apply_extras(int64_t /*step*/) {}
  // Each scheduler's constructor calls it last: step 0 as PyTorch's constructor takes it.
  void initial_step() { advance(0, /*chained=*/true); }
  // Every group's lr at `step` as step() reaches it from construction (each group's lr the base
  // lr), or, with `restarted`, from PyTorch's step(0) (the closed form at 0; SequentialLR does
  // that at a milestone). The lr_at values for a schedule that is not chainable.
  std::vector<double> replayed_lrs(int64_t step, bool restarted) const;
  // Sets the optimizer and this scheduler to replayed_lrs(step, restarted) at `step`.
  void set_position(int64_t step, bool restarted);
  // Records `step` as the last one and the optimizer's lrs as the last lrs, changing nothing else.
  void record(int64_t step);
  // Throws naming `who` unless the optimizer still has the groups this scheduler was built for.
  void check_groups(const char* who) const;
  Optimizer& opt_;
  std::vector<double> base_lrs_;

 private:
  friend class SequentialLR;
  friend class ChainedScheduler;
  void advance(int64_t step, bool chained);
  int64_t last_step_ = 0;
  std::vector<double> last_lr_;
};

// torch.optim.lr_scheduler.StepLR: step() multiplies the lr by gamma every step_size steps;
// closed form lr = base * gamma^floor(step / step_size). Chainable. step_size >= 1, gamma > 0.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& opt, int64_t step_size, double gamma = 0.1);
  double lr_at(int64_t step, size_t group) const override;
  double next_lr(int64_t step, size_t group, double current) const override;
  bool chainable() const override { return true; }

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
