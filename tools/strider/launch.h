#pragma once
// `strider launch`: starts a training job's ranks (through mpirun, srun inside a Slurm
// allocation, or the launcher given) and
// watches them. When a rank or host fails or freezes it ends what is left of the job and starts
// it again from the latest committed checkpoint in the run directory (--out), leaving out a host
// that froze or was lost (with a hostfile: at the smaller world size), until the job finishes,
// --max-restarts is used up, or fewer than --min-ranks ranks are left. Each restart is logged
// with "restart", its cause and its cost. On SIGINT (Ctrl-C), SIGTERM or SIGHUP it ends the job
// (SIGTERM to its process group, SIGKILL after --end-grace), waits for it, and exits with
// 128 + the signal, never restarting.
#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace strider::tools {

struct LaunchOptions {
  int64_t ranks = 1;
  int64_t min_ranks = 0;          // 0: not given (restarts go down to 1 rank; the first start needs all -n)
  int64_t max_restarts = 3;
  std::string hostfile;           // OpenMPI's format; hosts that fail are left out of the next launch
  std::string launcher = "auto";  // its words, split on spaces; auto: srun in a Slurm allocation, else mpirun
  double end_grace = 10;          // seconds a job may take to end after a rank froze or a host was lost
  std::vector<std::string> command;  // after "--": the training command (its --out is the run directory)
};

void add_launch_flags(CLI::App& launch, LaunchOptions& o);
// The finished job's exit code (0), or the last failure's once the launch gives up.
int run_launch(const LaunchOptions& o);

}  // namespace strider::tools
