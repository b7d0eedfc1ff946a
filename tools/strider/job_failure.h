#pragma once
// What ended a job, read from what its ranks and its launcher printed: a rank frozen (named by
// the heartbeat), a rank killed (mpirun's "exited on signal"), a host lost (mpirun's "lost
// communication with a remote daemon"), or a rank that failed with an error. The causes that
// say which host is gone are kept over a rank's error, which every other rank repeats.
#include <string>

namespace strider::tools {

struct JobFailure {
  enum class Kind { None, Failed, Killed, Frozen, HostLost };
  Kind kind = Kind::None;
  int rank = -1;     // -1: not known
  std::string host;  // empty: not known
  std::string line;  // what was printed
  // "rank 3 on host h1 froze (no heartbeat)"
  std::string describe() const;
  // Whether the host is gone or unusable (frozen or lost), so a relaunch must leave it out.
  bool host_unusable() const { return !host.empty() && (kind == Kind::Frozen || kind == Kind::HostLost); }
};

class FailureWatch {
 public:
  void observe(const std::string& line);
  const JobFailure& failure() const { return failure_; }

 private:
  void keep(JobFailure f);
  JobFailure failure_;
  bool daemon_lost_ = false;  // the launcher's message names the host a few lines later
};

}  // namespace strider::tools
