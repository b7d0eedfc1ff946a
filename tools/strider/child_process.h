#pragma once
// A command run as a child in a process group of its own, its output passed through line by
// line (stdout to stdout, stderr to stderr) to an observer, so a supervisor can read what it
// says and end the whole group.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace strider::tools {

class ChildProcess {
 public:
  // Starts argv[0] (looked up on PATH) with the rest as arguments.
  explicit ChildProcess(const std::vector<std::string>& argv);
  ~ChildProcess();  // kills the group if it still runs
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Passes output lines to `observe` until the child exits or `poll_for` passes; returns true
  // once the child has exited (then exit_code() holds).
  bool pump(std::chrono::milliseconds poll_for, const std::function<void(const std::string&)>& observe);
  // SIGKILL to the child's whole process group and to every process below this one (ranks
  // OpenMPI put in groups of their own, orphans the launcher inherited as their subreaper).
  void kill_group();
  // Sends `sig` to the child's whole process group (nothing once the child has been reaped and
  // its group is gone).
  void signal_group(int sig);
  int exit_code() const { return exit_code_; }  // 128 + signal for a child ended by one

 private:
  // Reads what is there; false when nothing was (or the pipe closed).
  bool forward(int& fd, std::string& pending, int to, const std::function<void(const std::string&)>& observe);
  pid_t pid_ = -1;
  int out_ = -1, err_ = -1;
  std::string out_pending_, err_pending_;
  bool exited_ = false;
  int exit_code_ = -1;
};

}  // namespace strider::tools
