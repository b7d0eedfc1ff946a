#include "dist/heartbeat.h"

#include "dist/end_job.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace strider::dist::detail {
namespace {

constexpr int kBeatTag = 1;
enum Kind : int32_t { kBeat = 1, kGoodbye = 2 };

}  // namespace

// One beat as it travels (fixed size, small enough to be sent eagerly by every transport).
struct Heartbeat::Beat {
  int32_t kind = kBeat;
  char host[64] = {};
  char doing[1400] = {};
};

namespace {

// The end of `text` that fits in `n - 1` bytes (a flight recorder's newest lines are last).
void copy_tail(const std::string& text, char* out, size_t n) {
  const size_t keep = std::min(text.size(), n - 1);
  std::memcpy(out, text.data() + text.size() - keep, keep);
  out[keep] = '\0';
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown host";
  return name;
}

std::string seconds(std::chrono::steady_clock::duration d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", std::chrono::duration<double>(d).count());
  return text;
}

}  // namespace

std::chrono::milliseconds Heartbeat::interval_for(std::chrono::milliseconds timeout) {
  return std::clamp(timeout / 10, std::chrono::milliseconds(20), std::chrono::milliseconds(1000));
}

Heartbeat::Heartbeat(MPI_Comm world, int rank, int size, std::chrono::milliseconds timeout, Doing doing,
                     OnSilence on_silence)
    : rank_(rank), size_(size), timeout_ms_(timeout.count()), doing_(std::move(doing)),
      on_silence_(std::move(on_silence)), host_(host_name()) {
  MPI_Comm_dup(world, &comm_);  // its own communicator: beats never meet a collective's messages
  if (size_ > 1) thread_ = std::thread([this] { loop(); });
}

Heartbeat::~Heartbeat() { stop(); }

void Heartbeat::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Heartbeat::loop() {
  using Clock = std::chrono::steady_clock;
  const int next = (rank_ + 1) % size_, previous = (rank_ + size_ - 1) % size_;
  Beat in;
  // Send buffers live on the heap: one still in flight when this thread ends is left to MPI.
  auto* out = new Beat;
  copy_tail(host_, out->host, sizeof out->host);
  MPI_Request receive = MPI_REQUEST_NULL, send = MPI_REQUEST_NULL;
  MPI_Irecv(&in, sizeof in, MPI_BYTE, previous, kBeatTag, comm_, &receive);
  Clock::time_point last_heard = Clock::now(), last_sent;
  std::string previous_host = "not yet known", previous_doing = "nothing yet (no beat arrived)";
  bool watching = true;
  for (;;) {
    const std::chrono::milliseconds timeout(timeout_ms_.load());
    const Clock::time_point now = Clock::now();
    for (int arrived = 1; watching && arrived;) {
      MPI_Test(&receive, &arrived, MPI_STATUS_IGNORE);
      if (!arrived) break;
      last_heard = now;
      previous_host = std::string(in.host, strnlen(in.host, sizeof in.host));
      previous_doing = std::string(in.doing, strnlen(in.doing, sizeof in.doing));
      if (in.kind == kGoodbye) watching = false;  // it ended its work: silence from now on is fine
      else MPI_Irecv(&in, sizeof in, MPI_BYTE, previous, kBeatTag, comm_, &receive);
    }
    int sent = 1;
    if (send != MPI_REQUEST_NULL) MPI_Test(&send, &sent, MPI_STATUS_IGNORE);
    if (sent) {  // a beat to a peer that is not taking them is not repeated, so none pile up
      copy_tail(doing_(), out->doing, sizeof out->doing);
      MPI_Isend(out, sizeof *out, MPI_BYTE, next, kBeatTag, comm_, &send);
      last_sent = now;
    }
    if (watching && now - last_heard > timeout && !job_ending()) {
      std::ostringstream msg;
      msg << "rank " << previous << " of " << size_ << " (host '" << previous_host << "') stopped answering: no "
          << "heartbeat for " << seconds(now - last_heard) << " (the limit is " << seconds(timeout)
          << ", --heartbeat-timeout); its process is stopped or frozen, or its host is unreachable (it reported no "
          << "error and did not disagree). What it last reported, " << seconds(now - last_heard) << " ago: "
          << previous_doing;
      on_silence_(msg.str(), previous);  // does not return
      return;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    if (cv_.wait_for(lock, interval_for(timeout), [this] { return stopping_; })) break;
  }
  say_goodbye(out, send, in, receive);
}

void Heartbeat::say_goodbye(Beat* out, MPI_Request send, Beat& in, MPI_Request& receive) {
  using Clock = std::chrono::steady_clock;
  const int next = (rank_ + 1) % size_, previous = (rank_ + size_ - 1) % size_;
  // Goodbye, so the watcher does not take this rank's end for a freeze.
  auto* goodbye = new Beat(*out);
  goodbye->kind = kGoodbye;
  copy_tail("finished its work", goodbye->doing, sizeof goodbye->doing);
  MPI_Request farewell = MPI_REQUEST_NULL;
  MPI_Isend(goodbye, sizeof *goodbye, MPI_BYTE, next, kBeatTag, comm_, &farewell);
  // The previous rank says goodbye too (every rank stops after finish()): take it, so no message
  // is left unreceived at MPI_Finalize (UCX, under MPICH, prints a warning for one). Small sends
  // complete at once unless the peer stopped taking them; then they are freed to finish on their
  // own and their buffers are deliberately not reclaimed.
  const Clock::time_point until = Clock::now() + std::chrono::seconds(2);
  int sent = 0;
  MPI_Request pending[2] = {send, farewell};
  while ((!sent || receive != MPI_REQUEST_NULL) && Clock::now() < until) {
    if (!sent) MPI_Testall(2, pending, &sent, MPI_STATUSES_IGNORE);
    int arrived = 0;
    if (receive != MPI_REQUEST_NULL) MPI_Test(&receive, &arrived, MPI_STATUS_IGNORE);
    if (arrived && in.kind != kGoodbye) MPI_Irecv(&in, sizeof in, MPI_BYTE, previous, kBeatTag, comm_, &receive);
    if (!arrived) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (sent) {
    delete out;
    delete goodbye;
  } else {
    for (MPI_Request& r : pending)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  }
  if (receive != MPI_REQUEST_NULL) {
    MPI_Cancel(&receive);
    MPI_Wait(&receive, MPI_STATUS_IGNORE);
  }
}

}  // namespace strider::dist::detail
