#pragma once
// torch.optim.lr_scheduler.ReduceLROnPlateau (PyTorch 1.13): step(metric), once per evaluation,
// multiplies every group's lr by factor (not below the group's min_lr, and only if that lowers it
// by more than eps) once the metric has not improved for more than `patience` steps, then
// ignores `cooldown` steps. "Improved" (mode "min": lower, "max": higher) means beyond the best
// so far by threshold: relative (best * (1 -+ threshold)) or absolute (best -+ threshold). A NaN
// metric never improves. The lrs it sets are PyTorch's exactly.
//
// Not an LRScheduler: its lr depends on the metrics seen, not only on the step, so a
// checkpoint's step cannot restore it and TrainingState does not take it. Save state() (its
// counters and each group's lr) with the checkpoint and load_state() it after the optimizer;
// unlike PyTorch's, load_state also sets the groups' lrs, which strider's checkpoints do not keep.
#include <cstdint>
#include <string>
#include <vector>

#include "strider/optim/optimizer.h"

namespace strider::optim {

struct ReduceLROnPlateauOptions {
  std::string mode = "min";            // "min" or "max"
  double factor = 0.1;                 // in (0, 1)
  int64_t patience = 10;               // >= 0
  double threshold = 1e-4;             // >= 0
  std::string threshold_mode = "rel";  // "rel" or "abs"
  int64_t cooldown = 0;                // >= 0
  std::vector<double> min_lr = {0.0};  // one for every group, or one per group; each >= 0
  double eps = 1e-8;                   // >= 0
};

class ReduceLROnPlateau {
 public:
  ReduceLROnPlateau(Optimizer& opt, ReduceLROnPlateauOptions options = {});
  ReduceLROnPlateau(const ReduceLROnPlateau&) = delete;
  ReduceLROnPlateau& operator=(const ReduceLROnPlateau&) = delete;
  // One evaluation's metric (a validation loss in mode "min").
  void step(double metric);
  // Every group's lr after the last step (the optimizer's at construction).
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  const Optimizer& optimizer() const { return opt_; }

  // PyTorch's state_dict() counters, and the groups' lrs. best is +inf ("min") or -inf ("max")
  // until a metric improves on it.
  struct State {
    int64_t last_step = 0;  // PyTorch's last_epoch: steps taken
    double best = 0;
    int64_t num_bad_epochs = 0, cooldown_counter = 0;
    std::vector<double> lrs;  // each group's lr
  };
  State state() const;
  // Puts back a state() of a scheduler with the same options on an optimizer with as many
  // groups; sets the groups' lrs. Throws (changing nothing) on a state that cannot be one.
  void load_state(const State& state);

 private:
  bool is_better(double a, double best) const;
  void reduce_lr();

  Optimizer& opt_;
  ReduceLROnPlateauOptions o_;
  std::vector<double> min_lrs_;
  int64_t last_step_ = 0;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0;
  std::vector<double> last_lr_;
};

}  // namespace strider::optim
