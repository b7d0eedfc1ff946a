#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <strider/strider.h>

namespace strider::tools {

ChildProcess::ChildProcess(const std::vector<std::string>& argv) {
  STRIDER_CHECK(!argv.empty(), "launch", "no command to run");
  int out[2], err[2];
  STRIDER_CHECK(pipe(out) == 0 && pipe(err) == 0, "launch", "cannot make pipes: ", std::strerror(errno));
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The stop signals wait until the child has dropped the launcher's handlers: one landing
  // between fork and exec would otherwise be caught by a copy of the launcher and lost.
  sigset_t stops, before;
  sigemptyset(&stops);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stops, sig);
  sigprocmask(SIG_BLOCK, &stops, &before);
  pid_ = fork();
  if (pid_ != 0) sigprocmask(SIG_SETMASK, &before, nullptr);
  STRIDER_CHECK(pid_ >= 0, "launch", "cannot start '", argv[0], "': ", std::strerror(errno));
  if (pid_ == 0) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      sigaction(sig, nullptr, &old);
      if (old.sa_handler != SIG_IGN) signal(sig, SIG_DFL);  // nohup's ignored SIGHUP stays ignored
    }
    sigprocmask(SIG_SETMASK, &before, nullptr);
    setpgid(0, 0);  // its own group: the supervisor ends mpirun and whatever it started together
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    close(out[0]), close(out[1]), close(err[0]), close(err[1]);
    execvp(args[0], args.data());
    std::fprintf(stderr, "strider launch: cannot run '%s': %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid_, pid_);  // also here, so the group exists before either side goes on
  close(out[1]), close(err[1]);
  out_ = out[0], err_ = err[0];
  // Non-blocking: processes the child started may keep the pipes open after it exits.
  fcntl(out_, F_SETFL, fcntl(out_, F_GETFL) | O_NONBLOCK);
  fcntl(err_, F_SETFL, fcntl(err_, F_GETFL) | O_NONBLOCK);
}

ChildProcess::~ChildProcess() {
  if (!exited_) {
    kill_group();
    waitpid(pid_, nullptr, 0);
  }
  if (out_ >= 0) close(out_);
  if (err_ >= 0) close(err_);
}

namespace {

// Every process below `root`: OpenMPI starts each local rank in a process group of its own, so
// a group signal reaches mpirun only, and ranks it could not end (they ignore SIGTERM, or mpirun
// was killed first) live on; the launcher is their subreaper, so they stay below it.
std::vector<pid_t> descendants_of(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const size_t close = line.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state = 0;
    pid_t parent = 0;
    if (rest >> state >> parent) children[parent].push_back(static_cast<pid_t>(std::stol(name)));
  }
  std::vector<pid_t> found, todo = {root};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    for (pid_t c : children[p]) found.push_back(c), todo.push_back(c);
  }
  return found;
}

}  // namespace

void ChildProcess::kill_group() {
  signal_group(SIGKILL);
  for (pid_t p : descendants_of(getpid())) {
    ::kill(p, SIGKILL);
    if (p != pid_) waitpid(p, nullptr, WNOHANG);  // orphans the launcher inherited (the child: pump's)
  }
}

void ChildProcess::signal_group(int sig) {
  // After the leader is reaped its id stays reserved while any member of its group lives, so
  // -pid_ still names only the group this class started.
  ::kill(-pid_, sig);
}

bool ChildProcess::forward(int& fd, std::string& pending, int to,
                           const std::function<void(const std::string&)>& observe) {
  char buf[65536];
  const ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
  if (n <= 0) {  // the child closed it (exited, or closed its output)
    if (!pending.empty()) observe(pending), pending.clear();
    close(fd);
    fd = -1;
    return false;
  }
  (void)!write(to, buf, static_cast<size_t>(n));
  pending.append(buf, static_cast<size_t>(n));
  for (size_t eol; (eol = pending.find('\n')) != std::string::npos; pending.erase(0, eol + 1))
    observe(pending.substr(0, eol));
  return true;
}

bool ChildProcess::pump(std::chrono::milliseconds poll_for, const std::function<void(const std::string&)>& observe) {
  if (exited_) return true;
  pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
  if (poll(fds, 2, static_cast<int>(poll_for.count())) > 0) {
    if (out_ >= 0 && (fds[0].revents & (POLLIN | POLLHUP))) forward(out_, out_pending_, STDOUT_FILENO, observe);
    if (err_ >= 0 && (fds[1].revents & (POLLIN | POLLHUP))) forward(err_, err_pending_, STDERR_FILENO, observe);
  }
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    // Drain what is already written before calling it done.
    while (out_ >= 0 && forward(out_, out_pending_, STDOUT_FILENO, observe)) {
    }
    while (err_ >= 0 && forward(err_, err_pending_, STDERR_FILENO, observe)) {
    }
    exited_ = true;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return exited_;
}

}  // namespace strider::tools
