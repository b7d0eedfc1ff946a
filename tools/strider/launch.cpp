#include "launch.h"

#include <unistd.h>

#include <chrono>
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
  launch.add_option("--min-ranks", o.min_ranks, "stop instead of relaunching on fewer ranks than this")
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
                    "seconds the job may take to end by itself after a rank froze or a host was lost")
      ->check(decimal_range(0.1, 86400.0))->capture_default_str();
  launch.add_option("command", o.command, "after --: the training command, e.g. strider train ... --out RUN_DIR")
      ->required();
}

int run_launch(const LaunchOptions& o) {
  STRIDER_CHECK(o.min_ranks <= o.ranks, "launch", "--min-ranks ", o.min_ranks, " is more than -n ", o.ranks);
  const std::string run_dir = flag_value(o.command, "--out");
  STRIDER_CHECK(!run_dir.empty(), "launch", "the training command has no --out DIR; restarts resume from the latest "
                "checkpoint in that run directory, so give it one");
  std::vector<Host> hosts;
  if (!o.hostfile.empty()) hosts = read_hostfile(o.hostfile);
  STRIDER_CHECK(o.hostfile.empty() || std::filesystem::path(launcher_words(o.launcher).at(0)).filename() != "srun",
                "launch", "--hostfile is for mpirun; under srun the ranks run on the Slurm allocation's nodes");
  const std::string live_hostfile = run_dir + "/.launch-hostfile";
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  STRIDER_CHECK(!ec && std::filesystem::is_directory(run_dir), "launch", "the training command's --out ", run_dir,
                " cannot be the run directory: ", ec ? ec.message() : "it is not a directory",
                "; give --out a new directory or the run's own");
  Attempt last;
  for (int64_t restart = 0;; ++restart) {
    const int64_t world = hosts.empty() ? o.ranks : std::min(o.ranks, total_slots(hosts));
    if (world < o.min_ranks) {
      say("stopping: " + std::to_string(world) + " ranks are left, fewer than --min-ranks " +
          std::to_string(o.min_ranks) + " (last failure: " + last.failure.describe() + ")");
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
