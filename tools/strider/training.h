#pragma once
// The parts of one training run. train_loop (train.cpp) makes them in order, then hands them
// to the functions that resume, train an epoch, report and finish.
#include <map>
#include <string>

#include <strider/strider.h>

#include "parallel.h"
#include "run_checkpoints.h"
#include "run_report.h"
#include "schedule.h"
#include "train_options.h"
#include "train_task.h"

namespace strider::tools {

// Where the run is. Checkpoints save the position and the run info; each step advances them.
struct RunState {
  int64_t global_step = 0;             // optimizer steps taken, over all legs of the run
  checkpoint::DataPosition position;   // the epoch and global batch to train next
  std::map<std::string, std::string> run_info;  // the run record (run_record.h) and the epoch's losses
  double last_loss = 0;                // the last step's loss over the global batch
};

struct Training {
  const TrainOptions& options;
  TrainTask& task;
  const Parallel& par;
  optim::Optimizer& opt;
  optim::LRScheduler& sched;
  const Schedule& schedule;
  RunState& state;
  RunCheckpoints& checkpoints;
  RunReport& report;
};

}  // namespace strider::tools
