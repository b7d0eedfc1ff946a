#pragma once
// What a run tells its user: on the lead rank, the progress line and a line per epoch on
// stderr and a record per epoch in --out/metrics.jsonl; on every rank, the loss and held-out
// score curves for the plot written at the end.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "schedule.h"
#include "svg_plot.h"
#include "train_options.h"
#include "train_task.h"

namespace strider::tools {

// An epoch's training so far.
struct EpochCounts {
  int64_t batch = 0;    // batches of the epoch done, with those a resumed run skipped
  int64_t trained = 0;  // batches this process trained
  int64_t samples = 0;  // samples this rank trained
  double loss_sum = 0;  // of the global batches' losses
  double seconds = 0;
  // The batches before a resume point, trained by the legs before it (from the checkpoint).
  int64_t carried_batches = 0;
  double carried_loss_sum = 0;
  double mean_loss() const {
    return (carried_loss_sum + loss_sum) / static_cast<double>(std::max<int64_t>(carried_batches + trained, 1));
  }
};

// One line of JSON; bytes that are not UTF-8 (paths from flags may hold them) are replaced
// instead of throwing.
std::string json_line(const nlohmann::json& j);

class RunReport {
 public:
  // Opens metrics.jsonl on the lead rank: afresh, or appended to when resuming.
  RunReport(const TrainOptions& options, const TrainTask& task, const Schedule& schedule, bool lead, int world);

  // The "training ..." line; the run's clock starts here.
  void start(int64_t model_parameters);
  void step(int64_t epoch, int64_t global_step, double loss, const EpochCounts& so_far);
  void end_of_epoch(int64_t epoch, int64_t global_step, const EpochCounts& done, const EvalResult& score, double lr);
  double seconds() const;
  void write_plot(const std::string& metric);

 private:
  const TrainOptions& o_;
  const TrainTask& task_;
  const Schedule& schedule_;
  bool lead_, tty_;
  int world_;
  std::ofstream metrics_;
  Series loss_curve_{"training loss", "step", "loss", {}}, eval_curve_{"held-out score", "epoch", "", {}};
  std::chrono::steady_clock::time_point start_;
};

}  // namespace strider::tools
