#pragma once
// Schedules made of other schedules, as torch.optim.lr_scheduler's (PyTorch 1.13). Both hold
// their members by pointer, as PyTorch holds them by reference: the members must outlive them,
// must all be built on the same optimizer, and, once composed, are stepped only through the
// composition. Neither takes another composition as a member (PyTorch's SequentialLR would call
// its step(0), which they lack). Both are LRSchedulers, so a checkpoint's TrainingState takes them,
// and set_last_step restores every member: the lrs equal an uninterrupted run's, bit for bit.
#include <cstdint>
#include <vector>

#include "strider/optim/lr_scheduler.h"

namespace strider::optim {

// SequentialLR: schedulers[0] runs from step 0, schedulers[i] from milestones[i - 1] on (one
// fewer milestone than schedulers, increasing, > 0). Construction sets each group's lr back to
// its initial_lr (undoing the members' own initial steps) and takes schedulers[0]'s step 0; at a
// milestone the next scheduler restarts at its step 0 from its closed form (PyTorch's step(0)),
// whatever lr the previous one left, and then steps on from there.
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& opt, std::vector<LRScheduler*> schedulers, std::vector<int64_t> milestones);
  double lr_at(int64_t step, size_t group) const override;
  void set_last_step(int64_t step) override;

 protected:
  void apply(int64_t step, bool chained) override;

 private:
  // The member running at `step`, and the step it is at.
  std::pair<size_t, int64_t> member_at(int64_t step) const;
  std::vector<LRScheduler*> schedulers_;
  std::vector<int64_t> milestones_;
};

// ChainedScheduler: each step() steps every member in order, so their effects compose (each
// chainable member scales the lr the one before it set). It takes no step of its own when built;
// its members must be at the same step (build them together, then chain them), which it starts at.
class ChainedScheduler : public LRScheduler {
 public:
  explicit ChainedScheduler(std::vector<LRScheduler*> schedulers);
  double lr_at(int64_t step, size_t group) const override;
  void set_last_step(int64_t step) override;

 protected:
  void apply(int64_t step, bool chained) override;

 private:
  // Every group's lr at `step` after each member's part of that step (members in order), from
  // the base lrs at step 0 in lockstep.
  std::vector<std::vector<double>> replay(int64_t step) const;
  std::vector<LRScheduler*> schedulers_;
};

}  // namespace strider::optim
