#include "strider/optim/composed_lr.h"

#include <algorithm>
#include <set>

#include "strider/core/error.h"

namespace strider::optim {
namespace {

// The members' common checks; `opt` is the optimizer they must all be built on.
void check_members(const char* op, const std::vector<LRScheduler*>& schedulers, const Optimizer& opt) {
  STRIDER_CHECK(!schedulers.empty(), op, "got no schedulers; pass the schedulers to compose, e.g. {&warmup, &decay}");
  std::set<const LRScheduler*> seen;
  for (size_t i = 0; i < schedulers.size(); ++i) {
    const LRScheduler* s = schedulers[i];
    STRIDER_CHECK(s != nullptr, op, "scheduler ", i, " is null");
    STRIDER_CHECK(&s->optimizer() == &opt, op, "scheduler ", i, " is bound to another optimizer than ",
                  i == 0 || std::string(op) == "SequentialLR" ? "the one passed" : "scheduler 0",
                  " (PyTorch: all schedulers must belong to the same optimizer); build every scheduler on the "
                  "optimizer it composes");
    STRIDER_CHECK(seen.insert(s).second, op, "scheduler ", i, " is listed twice; list each scheduler once");
    STRIDER_CHECK(!dynamic_cast<const SequentialLR*>(s) && !dynamic_cast<const ChainedScheduler*>(s), op, "scheduler ",
                  i, " is itself a SequentialLR or ChainedScheduler, which cannot be a member; list its schedulers "
                  "here instead");
  }
}

Optimizer& first_optimizer(const std::vector<LRScheduler*>& schedulers) {
  STRIDER_CHECK(!schedulers.empty() && schedulers[0] != nullptr, "ChainedScheduler",
                "got no schedulers; pass the schedulers to chain, e.g. {&constant, &exponential}");
  return const_cast<Optimizer&>(schedulers[0]->optimizer());
}

}  // namespace

SequentialLR::SequentialLR(Optimizer& opt, std::vector<LRScheduler*> schedulers, std::vector<int64_t> milestones)
    : LRScheduler(opt), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  const char* op = "SequentialLR";
  check_members(op, schedulers_, opt);
  STRIDER_CHECK(milestones_.size() + 1 == schedulers_.size(), op, "got ", schedulers_.size(), " schedulers and ",
                milestones_.size(), " milestones; it needs one milestone fewer than schedulers (the step at which "
                "each scheduler after the first takes over)");
  for (size_t i = 0; i < milestones_.size(); ++i) {
    STRIDER_CHECK(milestones_[i] > 0, op, "milestone ", i, " is ", milestones_[i],
                  "; milestones are steps > 0 (schedulers[0] runs from step 0)");
    STRIDER_CHECK(i == 0 || milestones_[i] > milestones_[i - 1], op, "milestones must be increasing, got ",
                  milestones_[i - 1], " then ", milestones_[i], "; list the steps at which each scheduler takes over, "
                  "in order");
  }
  check_groups(op);
  for (LRScheduler* s : schedulers_) s->check_groups(op);
  for (size_t g = 0; g < base_lrs_.size(); ++g) opt_.set_lr(g, base_lrs_[g]);  // PyTorch: lr = initial_lr
  schedulers_[0]->advance(0, /*chained=*/true);  // schedulers[0]'s initial step, again
  record(0);
}

std::pair<size_t, int64_t> SequentialLR::member_at(int64_t step) const {
  const size_t i = static_cast<size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), step) -
                                       milestones_.begin());
  return {i, i == 0 ? step : step - milestones_[i - 1]};
}

void SequentialLR::apply(int64_t step, bool chained) {
  if (!chained) {
    set_last_step(step);
    return;
  }
  const auto [i, local] = member_at(step);
  if (local == 0 && i > 0) schedulers_[i]->set_position(0, /*restarted=*/true);  // PyTorch's step(0)
  else schedulers_[i]->step();
}

double SequentialLR::lr_at(int64_t step, size_t group) const {
  const auto [i, local] = member_at(step);
  return schedulers_[i]->replayed_lrs(local, /*restarted=*/i > 0).at(group);
}

void SequentialLR::set_last_step(int64_t step) {
  STRIDER_CHECK(step >= 0, "SequentialLR", "the step must be >= 0, got ", step);
  check_groups("SequentialLR");
  const auto [i, local] = member_at(step);
  // A member after the first starts from its closed form at its milestone, whatever came before.
  schedulers_[i]->set_position(local, /*restarted=*/i > 0);
  record(step);
}

ChainedScheduler::ChainedScheduler(std::vector<LRScheduler*> schedulers)
    : LRScheduler(first_optimizer(schedulers)), schedulers_(std::move(schedulers)) {
  const char* op = "ChainedScheduler";
  check_members(op, schedulers_, opt_);
  for (size_t i = 1; i < schedulers_.size(); ++i)
    STRIDER_CHECK(schedulers_[i]->last_step() == schedulers_[0]->last_step(), op, "scheduler ", i, " is at step ",
                  schedulers_[i]->last_step(), " but scheduler 0 at step ", schedulers_[0]->last_step(),
                  "; chain schedulers right after building them, before stepping any (a resumed chain replays them "
                  "in step)");
  check_groups(op);
  for (LRScheduler* s : schedulers_) s->check_groups(op);
  record(schedulers_[0]->last_step());  // PyTorch: _last_lr is the groups' lrs
}

void ChainedScheduler::apply(int64_t step, bool chained) {
  if (!chained) {
    set_last_step(step);
    return;
  }
  for (LRScheduler* s : schedulers_) s->step();
}

std::vector<std::vector<double>> ChainedScheduler::replay(int64_t step) const {
  std::vector<double> lrs = base_lrs_;
  std::vector<std::vector<double>> after(schedulers_.size());
  for (int64_t s = 0; s <= step; ++s) {
    for (size_t i = 0; i < schedulers_.size(); ++i) {
      for (size_t g = 0; g < lrs.size(); ++g) lrs[g] = schedulers_[i]->next_lr(s, g, lrs[g]);
      if (s == step) after[i] = lrs;
    }
  }
  return after;
}

double ChainedScheduler::lr_at(int64_t step, size_t group) const { return replay(step).back().at(group); }

void ChainedScheduler::set_last_step(int64_t step) {
  STRIDER_CHECK(step >= 0, "ChainedScheduler", "the step must be >= 0, got ", step);
  check_groups("ChainedScheduler");
  const std::vector<std::vector<double>> after = replay(step);
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    for (size_t g = 0; g < after[i].size(); ++g) opt_.set_lr(g, after[i][g]);
    schedulers_[i]->apply_extras(step);
    schedulers_[i]->record(step);  // its get_last_lr: the lrs after its part, as after a step
  }
  record(step);
}

}  // namespace strider::optim
