#include "job_failure.h"

#include <regex>

namespace strider::tools {

std::string JobFailure::describe() const {
  const std::string who = (rank >= 0 ? "rank " + std::to_string(rank) : std::string("a rank")) +
                          (host.empty() ? "" : " on host " + host);
  switch (kind) {
    case Kind::None: return "the job ended with an error and no rank said why";
    case Kind::Failed: return who + " failed: " + line;
    case Kind::Killed: return who + " was killed (" + line + ")";
    case Kind::Frozen: return who + " froze (no heartbeat)";
    case Kind::HostLost: return "host " + host + " was lost (its daemon stopped answering)";
  }
  return line;
}

void FailureWatch::keep(JobFailure f) {
  // A specific cause (frozen, killed, host lost) replaces an error report, which the other ranks
  // print as they stop; among specific causes the first one seen stays.
  if (failure_.kind == JobFailure::Kind::None ||
      (failure_.kind == JobFailure::Kind::Failed && f.kind != JobFailure::Kind::Failed))
    failure_ = std::move(f);
}

void FailureWatch::observe(const std::string& line) {
  static const std::regex frozen(R"(rank (\d+) of \d+ \(host '([^']*)'\) stopped answering)");
  static const std::regex killed(R"(process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+))");
  static const std::regex remote_daemon(R"(Remote daemon:.* on node (\S+))");
  static const std::regex srun_task(R"(^srun: error: (\S+): tasks? (\d+)[-0-9,]*: (Killed|Terminated|Segmentation))");
  static const std::regex failed(R"(^strider: (\[rank (\d+) of \d+\])?(.*))");
  std::smatch m;
  if (std::regex_search(line, m, frozen)) {
    keep({JobFailure::Kind::Frozen, std::stoi(m[1].str()), m[2].str(), line});
  } else if (std::regex_search(line, m, killed)) {
    keep({JobFailure::Kind::Killed, std::stoi(m[1].str()), m[2].str(), "signal " + m[3].str()});
  } else if (std::regex_search(line, m, srun_task)) {
    keep({JobFailure::Kind::Killed, std::stoi(m[2].str()), m[1].str(), m[3].str()});
  } else if (line.find("lost communication with a remote daemon") != std::string::npos) {
    daemon_lost_ = true;
  } else if (daemon_lost_ && std::regex_search(line, m, remote_daemon)) {
    keep({JobFailure::Kind::HostLost, -1, m[1].str(), line});
    daemon_lost_ = false;
  } else if (std::regex_search(line, m, failed) && line.find("stopping because rank") == std::string::npos) {
    keep({JobFailure::Kind::Failed, m[2].matched ? std::stoi(m[2].str()) : -1, "", m[3].str()});
  }
}

}  // namespace strider::tools
