#pragma once
// Heartbeat: a thread of its own (not the comm thread, no collective) sends a small beat to the
// next rank of the world every interval and watches the beats of the previous rank, so every rank
// is watched by one other. A rank whose process stopped (SIGSTOP, a host gone from the network, a
// process wedged as a whole) stops beating, and its watcher names it after `timeout` of silence
// and ends the job. A rank that is merely slow (a long step, a slow disk) goes on beating from
// this thread, so it is never taken for frozen; a thread deadlocked inside a live process is the
// collective timeout's to name. Each beat carries the sender's host and its flight recorder's
// tail, so the watcher can say what the silent rank was last doing.
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace strider::dist::detail {

class Heartbeat {
 public:
  // What this rank is doing, sent with each beat (called on the heartbeat thread).
  using Doing = std::function<std::string()>;
  // Ends the job; `silent_rank` will not answer, so nobody should wait for it.
  using OnSilence = std::function<void(const std::string& message, int silent_rank)>;

  // Duplicates `world` (collectively) and starts the thread.
  Heartbeat(MPI_Comm world, int rank, int size, std::chrono::milliseconds timeout, Doing doing, OnSilence on_silence);
  ~Heartbeat();  // stop()
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  void set_timeout(std::chrono::milliseconds t) { timeout_ms_.store(t.count()); }
  // Says goodbye to the watcher (so a rank that ends first is not taken for frozen), then joins.
  void stop();

  // The interval between beats for a timeout: a tenth of it, within [20 ms, 1 s].
  static std::chrono::milliseconds interval_for(std::chrono::milliseconds timeout);

 private:
  struct Beat;
  void loop();
  // Sends the last beat (a goodbye) and takes the previous rank's, within a bounded wait.
  void say_goodbye(Beat* out, MPI_Request send, Beat& in, MPI_Request& receive);

  const int rank_, size_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::atomic<int64_t> timeout_ms_;
  Doing doing_;
  OnSilence on_silence_;
  std::string host_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace strider::dist::detail
