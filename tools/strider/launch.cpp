#include "launch.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <strider/strider.h>

#include "child_process.h"
#include "flag_checks.h"
#include "hostfile.h"
#include "job_failure.h"
#include "memory_snapshots.h"

namespace strider::tools {
namespace {

using Clock = std::chrono::steady_clock;

// SIGINT, SIGTERM or SIGHUP to the launcher (Ctrl-C reaches only the launcher: the job runs in a
// process group of its own). The first is the one the launcher exits with; a second one ends
// the job without waiting out the grace.
volatile sig_atomic_t stop_signal = 0;
volatile sig_atomic_t signals_seen = 0;
void on_stop_signal(int sig) {
  if (stop_signal == 0) stop_signal = sig;
  signals_seen = signals_seen + 1;
}

// Installs on_stop_signal for the launch and restores what was there after.
class StopSignals {
 public:
  StopSignals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: poll() returns at once
    for (size_t i = 0; i < 3; ++i) {
      sigaction(kSignals[i], &sa, &old_[i]);
      // A launcher started under nohup keeps ignoring SIGHUP: a logout must not end the job.
      if (kSignals[i] == SIGHUP && old_[i].sa_handler == SIG_IGN) sigaction(SIGHUP, &old_[i], nullptr);
    }
    // Ranks that OpenMPI starts in process groups of their own, orphaned when mpirun is killed,
    // come back to the launcher, which can then end them (ChildProcess::kill_group).
    prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  ~StopSignals() {
    for (size_t i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3];
};

std::string signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "signal " + std::to_string(sig);
  }
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void say(const std::string& text) { std::cerr << "strider launch: " << text << std::endl; }

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The launcher's words: srun inside a Slurm allocation (SLURM_JOB_ID set), else mpirun, unless given.
std::vector<std::string> launcher_words(const std::string& launcher) {
  if (launcher != "auto") {
    std::vector<std::string> w = words(launcher);
    STRIDER_CHECK(!w.empty(), "launch", "--launcher is empty; give a command such as 'mpirun --bind-to none'");
    return w;
  }
  if (std::getenv("SLURM_JOB_ID")) return {"srun", "--mpi=pmix", "--kill-on-bad-exit=1"};
  return {"mpirun", "--bind-to", "none"};
}

// The value of `flag` in the training command ("--out DIR" or "--out=DIR"), empty if absent.
std::string flag_value(const std::vector<std::string>& command, const std::string& flag) {
  for (size_t i = 0; i < command.size(); ++i) {
    if (command[i] == flag && i + 1 < command.size()) return command[i + 1];
    if (command[i].rfind(flag + "=", 0) == 0) return command[i].substr(flag.size() + 1);
  }
  return "";
}

// The command with --resume RUN_DIR in place of any --resume it had.
std::vector<std::string> resuming(const std::vector<std::string>& command, const std::string& run_dir) {
  std::vector<std::string> out;
  for (size_t i = 0; i < command.size(); ++i) {
    if (command[i] == "--resume") {
      ++i;
      continue;
    }
    if (command[i].rfind("--resume=", 0) == 0) continue;
    out.push_back(command[i]);
  }
  out.push_back("--resume");
  out.push_back(run_dir);
  return out;
}

// The highest step the run directory's metrics record (how far training got), or -1.
int64_t last_recorded_step(const std::string& run_dir) {
  std::ifstream in(run_dir + "/metrics.jsonl");
  int64_t step = -1;
  for (std::string line; std::getline(in, line);) {
    const auto rec = nlohmann::json::parse(line, nullptr, false);
    if (rec.is_object() && rec.contains("step") && rec["step"].is_number_integer())
      step = std::max(step, rec["step"].get<int64_t>());
  }
  return step;
}

std::string host_list(const std::vector<Host>& hosts) {
  std::string s;
  for (const Host& h : hosts) s += (s.empty() ? "" : ", ") + h.name + " (" + std::to_string(h.slots) + ")";
  return s;
}

struct Attempt {
  int exit_code = 0;
  int stopped_by = 0;  // the signal the launcher received, after which it ended the job
  JobFailure failure;
  Clock::time_point failed_at;
};

// A restart runs the same command. An error a rank raised (or a failure no rank explained) before
// the job recorded any step is the command's own (a flag, a file, the launcher) and recurs, as
// does the same error again with no step since. Killed, frozen and lost ranks are restarted.
bool restart_cannot_help(const Attempt& now, const Attempt* before, bool progressed) {
  if (progressed) return false;
  if (now.failure.kind != JobFailure::Kind::Failed && now.failure.kind != JobFailure::Kind::None) return false;
  return before == nullptr || (before->failure.kind == now.failure.kind && before->failure.line == now.failure.line);
}

// The launcher received a stop signal: TERM to the job's process group (mpirun passes it on to
// the ranks), KILL to the group if it has not ended `grace` seconds later (or at a second
// signal), then waits for it, saying what it did.
void end_after_signal(ChildProcess& child, double grace, const std::function<void(const std::string&)>& observe) {
  std::ostringstream g;
  g << grace;
  say("received " + signal_name(stop_signal) + "; ending the job: SIGTERM to its process group, SIGKILL if it "
      "has not ended " + g.str() + " s later (--end-grace; another signal: at once)");
  const int seen = signals_seen;
  const Clock::time_point sent = Clock::now();
  child.signal_group(SIGTERM);
  bool killed = false;
  while (!child.pump(std::chrono::milliseconds(100), observe)) {
    if (!killed && (seconds_since(sent) > grace || signals_seen != seen)) {
      killed = true;
      say(std::string("the job has not ended ") + (signals_seen != seen ? "and another signal came" : "within the grace") +
          "; SIGKILL to its process group and every process it started");
      child.kill_group();
    }
  }
  child.kill_group();  // whatever of the group outlived its leader (ESRCH if nothing did)
  char took[32];
  std::snprintf(took, sizeof took, "%.1f", seconds_since(sent));
  say(std::string("the job ended ") + took + " s after " + (killed ? "SIGTERM (SIGKILLed)" : "SIGTERM") +
      " (its exit code " + std::to_string(child.exit_code()) + "); not restarting after " +
      signal_name(stop_signal) + "; exiting with " + std::to_string(128 + stop_signal));
}

// Runs the job once: passes its output through, ends it if it does not end by itself within
// the grace period after a rank froze or a host was lost. After a failure (`previous`), says
// when the relaunched job is training again (its "resuming" line).
Attempt run_once(const std::vector<std::string>& argv, double end_grace, const Attempt* previous) {
  ChildProcess child(argv);
  FailureWatch watch;
  std::optional<Clock::time_point> noticed;
  bool ending = false;
  Attempt a;
  auto observe = [&](const std::string& line) {
    watch.observe(line);
    if (previous && line.rfind("resuming ", 0) == 0) {
      char text[32];
      std::snprintf(text, sizeof text, "%.1f", seconds_since(previous->failed_at));
      say(std::string("training again ") + text + " s after the failure");
      previous = nullptr;
    }
  };
  while (!child.pump(std::chrono::milliseconds(200), observe)) {
    if (stop_signal != 0) {
      a.stopped_by = stop_signal;
      end_after_signal(child, end_grace, observe);
      break;
    }
    const JobFailure& f = watch.failure();
    if (!noticed && (f.kind == JobFailure::Kind::Frozen || f.kind == JobFailure::Kind::HostLost ||
                     f.kind == JobFailure::Kind::Killed))
      noticed = Clock::now();
    if (noticed && !ending && seconds_since(*noticed) > end_grace) {
      ending = true;
      std::ostringstream grace;  // --end-grace as given: 0.5, not 0
      grace << end_grace;
      say("the job has not ended " + grace.str() + " s after " + f.describe() + "; ending it");
      child.kill_group();
    }
  }
  a.exit_code = child.exit_code();
  a.failure = watch.failure();
  a.failed_at = noticed.value_or(Clock::now());
  return a;
}

}  // namespace

void add_launch_flags(CLI::App& launch, LaunchOptions& o) {
  launch.add_option("-n,--ranks", o.ranks, "ranks to start")->check(whole_range<int64_t>(1, int64_t{1} << 20))->required();
  launch.add_option("--min-ranks", o.min_ranks, "stop instead of relaunching on fewer ranks than this (default 1); a --hostfile with fewer slots "
                  "than -n starts on as few as this (without --min-ranks it is refused)")
      ->check(whole_range<int64_t>(1, int64_t{1} << 20));
  launch.add_option("--max-restarts", o.max_restarts, "relaunches after failures before giving up")
      ->check(whole_range<int64_t>(0, int64_t{1} << 20))->capture_default_str();
  launch.add_option("--hostfile", o.hostfile, "OpenMPI hostfile ('HOST slots=N' lines); a failed host is left out")
      ->check(non_empty());
  launch.add_option("--launcher", o.launcher,
                    "the command that starts the ranks, given -np N (and --hostfile), or -n N for srun; auto: "
                    "'srun --mpi=pmix --kill-on-bad-exit=1' inside a Slurm allocation, else 'mpirun --bind-to none'")
      ->check(non_empty())
      ->capture_default_str();
  launch.add_option("--end-grace", o.end_grace,
                    "seconds the job may take to end by itself after a rank froze or a host was lost, and to end "
                  "after SIGTERM when the launcher got SIGINT, SIGTERM or SIGHUP, before SIGKILL")
      ->check(decimal_range(0.1, 86400.0))->capture_default_str();
  launch.add_option("command", o.command, "after --: the training command, e.g. strider train ... --out RUN_DIR")
      ->required();
}

int run_launch(const LaunchOptions& o) {
  const StopSignals stop_signals;
  STRIDER_CHECK(o.min_ranks <= o.ranks, "launch", "--min-ranks ", o.min_ranks, " is more than -n ", o.ranks);
  const std::string run_dir = flag_value(o.command, "--out");
  STRIDER_CHECK(!run_dir.empty(), "launch", "the training command has no --out DIR; restarts resume from the latest "
                "checkpoint in that run directory, so give it one");
  std::vector<Host> hosts;
  if (!o.hostfile.empty()) hosts = read_hostfile(o.hostfile);
  STRIDER_CHECK(o.hostfile.empty() || std::filesystem::path(launcher_words(o.launcher).at(0)).filename() != "srun",
                "launch", "--hostfile is for mpirun; under srun the ranks run on the Slurm allocation's nodes");
  const std::string live_hostfile = run_dir + "/.launch-hostfile";
  const int64_t min_ranks = o.min_ranks > 0 ? o.min_ranks : 1;
  if (!hosts.empty() && total_slots(hosts) < o.ranks) {
    // Fewer slots than -n: a run at another world size than asked for (another global batch per
    // rank, another sharding) is started only when --min-ranks says so.
    const std::string slots = "--hostfile " + o.hostfile + " has " + std::to_string(total_slots(hosts)) +
                              " slots (" + host_list(hosts) + ") for the " + std::to_string(o.ranks) +
                              " ranks -n asks for";
    STRIDER_CHECK(o.min_ranks > 0 && total_slots(hosts) >= o.min_ranks, "launch", slots,
                  o.min_ranks > 0 ? ", fewer than --min-ranks " + std::to_string(o.min_ranks) : std::string(),
                  ". Give the hostfile more slots, or --min-ranks below -n to start on fewer ranks");
    say(slots + "; starting " + std::to_string(total_slots(hosts)) + " ranks, as --min-ranks " +
        std::to_string(o.min_ranks) + " allows");
  }
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  STRIDER_CHECK(!ec && std::filesystem::is_directory(run_dir), "launch", "the training command's --out ", run_dir,
                " cannot be the run directory: ", ec ? ec.message() : "it is not a directory",
                "; give --out a new directory or the run's own");
  Attempt last;
  for (int64_t restart = 0;; ++restart) {
    if (stop_signal != 0) {
      say("received " + signal_name(stop_signal) + " between launches; not restarting; exiting with " +
          std::to_string(128 + stop_signal));
      return 128 + stop_signal;
    }
    const int64_t world = hosts.empty() ? o.ranks : std::min(o.ranks, total_slots(hosts));
    if (world < min_ranks) {
      say("stopping: " + std::to_string(world) + " ranks are left, fewer than --min-ranks " +
          std::to_string(min_ranks) + " (last failure: " + last.failure.describe() + ")");
      return last.exit_code ? last.exit_code : 1;
    }
    std::vector<std::string> argv = launcher_words(o.launcher);
    const bool srun = std::filesystem::path(argv.at(0)).filename() == "srun";
    argv.insert(argv.end(), {srun ? "-n" : "-np", std::to_string(world)});
    if (!hosts.empty()) {
      write_hostfile(live_hostfile, hosts);
      argv.insert(argv.end(), {"--hostfile", live_hostfile});
    }
    // Where the relaunch continues: the newer of the latest checkpoint file and the in-memory
    // snapshot the run recorded (the trainer falls back to the file if the hosts lost the snapshot).
    const auto checkpoints = checkpoint::committed_checkpoints(run_dir);
    const int64_t file_step = checkpoints.empty() ? -1 : checkpoints.back().step;
    const int64_t memory_step = recorded_memory_snapshot_step(run_dir);
    const int64_t resume_step = std::max(file_step, memory_step);
    const std::vector<std::string> command = resume_step < 0 ? o.command : resuming(o.command, run_dir);
    argv.insert(argv.end(), command.begin(), command.end());
    std::string start = "starting " + std::to_string(world) + " ranks" +
                        (hosts.empty() ? "" : " on " + host_list(hosts));
    if (resume_step >= 0)
      start += ", resuming from step " + std::to_string(resume_step) +
               (memory_step > file_step ? " (the in-memory snapshot)" : std::string());
    if (restart > 0) {
      const int64_t reached = last_recorded_step(run_dir);
      const int64_t resumed = std::max<int64_t>(resume_step, 0);
      char cost[96];
      std::snprintf(cost, sizeof cost, "%.1f s from the failure to the relaunch", seconds_since(last.failed_at));
      const std::string redo = reached > resumed ? std::to_string(reached - resumed) + " recorded steps to redo; " : "";
      say("restart " + std::to_string(restart) + " of at most " + std::to_string(o.max_restarts) + ": " +
          last.failure.describe() + "; " + start + " (" + redo + cost + ")");
    } else {
      say(start);
    }
    const Attempt failed = last;
    const int64_t reached_before = last_recorded_step(run_dir);
    last = run_once(argv, o.end_grace, restart > 0 ? &failed : nullptr);
    if (last.stopped_by != 0) return 128 + last.stopped_by;
    if (last.exit_code == 0) {
      say("the job finished" + (restart ? " after " + std::to_string(restart) + " restarts" : std::string()));
      std::filesystem::remove(live_hostfile);
      return 0;
    }
    if (restart_cannot_help(last, restart > 0 ? &failed : nullptr, last_recorded_step(run_dir) > reached_before)) {
      say("stopping: " + last.failure.describe() + " (exit code " + std::to_string(last.exit_code) +
          ") with no step recorded" + (restart > 0 ? " since the last restart failed the same way" : "") +
          "; a restart runs the same command and would fail the same way");
      return last.exit_code;
    }
    if (restart >= o.max_restarts) {
      say("stopping: the job failed (" + last.failure.describe() + ", exit code " + std::to_string(last.exit_code) +
          ") and all " + std::to_string(o.max_restarts) + " restarts (--max-restarts) are used");
      return last.exit_code;
    }
    if (last.failure.host_unusable())
      std::erase_if(hosts, [&](const Host& h) { return h.name == last.failure.host; });
  }
}

}  // namespace strider::tools
