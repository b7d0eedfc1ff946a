#pragma once
// CommThread: after MPI_Init every MPI call of a process group happens on this one background
// thread, in the order collectives were issued (the CPU analog of a communication stream). The
// caller's threads keep computing while a collective runs, so prefetching overlaps for real;
// OpenMPI's shared-memory transport only makes progress inside MPI calls, which this thread keeps
// making. A request that waits past the timeout asks every rank where it is and aborts the job
// with the ranks that never arrived. Before each collective the ranks compare its signature, so a
// mismatched or missing collective is named before any buffer is read. The signatures are
// compared in batches: one small all-reduce carries those of every collective queued and not yet
// compared (up to kBatchSlots), on a communicator of its own, so over a network one round trip
// checks a run of queued collectives and travels while the collectives before them move their
// data; a collective still runs only once its own signature is compared. Ranks may have queued
// different numbers when they post a batch: a slot some rank left empty is compared in the next
// batch, and every rank sees the same result, so they agree on what was compared. Waiting for a
// result is waiting for the peers to arrive, so it sleeps between polls; once they are there, the
// data moves under continuous polling (Pace).
#include <mpi.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "dist/flight_recorder.h"

namespace strider::dist::detail {

class CommThread;

// Handed to a running collective: waits on its MPI requests under the timeout.
class RequestWaiter {
 public:
  explicit RequestWaiter(CommThread& owner) : owner_(owner) {}
  void wait(MPI_Request* requests, int count);
  void wait(MPI_Request* request) { wait(request, 1); }

 private:
  CommThread& owner_;
};

class CommThread {
 public:
  using Task = std::function<void(RequestWaiter&)>;
  using Abort = std::function<void(const std::string&)>;

  // Communicates over duplicates of `parent` (the world, or a communicator from a split); the
  // duplicates are made here, collectively over `parent`.
  CommThread(MPI_Comm parent, int rank, int size, Abort abort);
  ~CommThread();  // drains the queue (so every posted signature is consumed), then joins
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;

  // Queues `task` as the next collective (its number is returned); `done` runs on the comm
  // thread when it finished. The task runs only once every rank's collective of that number
  // has the same signature.
  uint64_t enqueue(CollectiveSignature signature, Task task, std::function<void()> done);

  void set_timeout(std::chrono::milliseconds t) { timeout_ms_.store(t.count()); }
  // Whether collectives enqueued from now on compare signatures (every rank must switch at the
  // same point of its collective sequence).
  void set_signature_checks(bool on) { check_signatures_.store(on); }
  // Tells every other rank this one is failing with `message` (callable from any thread); their
  // comm threads print it and abort, so each rank's log says why the job ended. No wait for
  // `silent_rank`'s acknowledgement (a rank known not to answer).
  void announce_failure(const std::string& message, int silent_rank = -1);
  MPI_Comm data_comm() const { return data_comm_; }
  const FlightRecorder& recorder() const { return recorder_; }

 private:
  friend class RequestWaiter;
  // Signatures one batch compares at most; also how many collectives the comm thread holds taken
  // from the queue (the one it runs included). Each slot is the compared fields and a presence flag.
  static constexpr size_t kBatchSlots = 16;
  static constexpr int kSlotFields = 7;  // present, then seq, op, dtype, count, extra, label hash
  static constexpr int kBatchWords = 2 * kSlotFields * static_cast<int>(kBatchSlots);  // maxima, negated minima
  struct Item {
    uint64_t seq;
    bool checked;  // compare the signature across ranks before running
    CollectiveSignature signature;
    Task task;
    std::function<void()> done;
    bool compared = false;  // a batch found it on every rank
    bool agrees = false;    // ... with the same signature everywhere
  };
  void loop();
  // Moves queued collectives into pipeline_ (up to kBatchSlots); takes the result of the batch
  // in flight if it arrived; posts the next batch when collectives wait to be compared and none
  // is in flight. Cheap when nothing changed.
  void post_signatures();
  void take_batch_result();
  // Waits until a batch compared `item`; on a difference, aborts naming every rank's signature.
  void check_signature(Item& item, RequestWaiter& waiter);
  void run(Item& item, RequestWaiter& waiter);
  // How a wait polls. Data: a collective's own transfers, which MPI moves only while it is called,
  // so it polls (yielding) and sleeps only once the wait outlasts 200 ms. Arrival: the signature
  // result, which completes when the last rank reaches the collective; past a few polls the peers
  // are elsewhere (computing), so it sleeps between polls instead of taking their cores.
  enum class Pace { Data, Arrival };
  static constexpr int kArrivalSpins = 64;  // polls (tens of us) before an arrival wait sleeps
  static constexpr std::chrono::microseconds kMinArrivalSleep{10}, kMaxArrivalSleep{500};
  void wait_requests(MPI_Request* requests, int count, Pace pace);
  // The same polling until `done()` holds (it polls MPI itself).
  template <class Done>
  void wait_until(Done&& done, Pace pace);
  // Answers other ranks' "where are you?" queries and acts on their failure announcements
  // (called while idle and while waiting).
  void answer_queries();
  // Acknowledges failure notices of ranks announcing at the same time as this one.
  void acknowledge_concurrent_failures();
  [[noreturn]] void report_timeout();

  const int rank_, size_;
  Abort abort_;
  // Signatures travel on a communicator of their own: ranks post them ahead by different amounts,
  // which would misorder them against the data collectives on one communicator.
  MPI_Comm data_comm_ = MPI_COMM_NULL, control_comm_ = MPI_COMM_NULL, signature_comm_ = MPI_COMM_NULL;
  std::atomic<int64_t> timeout_ms_{600'000};
  std::atomic<bool> check_signatures_{true};
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  uint64_t next_seq_ = 1;
  std::atomic<uint64_t> last_enqueued_{0};
  // Taken from queue_ by the comm thread, oldest first (consecutive numbers); front is the one
  // running or next to run.
  std::deque<Item> pipeline_;
  uint64_t last_taken_ = 0;
  // The batch in flight on signature_comm_: the numbers of the collectives in its slots, and the
  // buffer MPI reduces into (never moved while posted). Every rank posts the same batches in the
  // same order, each only after taking the previous one's result.
  bool batch_posted_ = false;
  MPI_Request batch_request_ = MPI_REQUEST_NULL;
  std::vector<uint64_t> batch_seqs_;
  std::array<int64_t, kBatchWords> batch_{};
  // What this rank's comm thread is doing, for answering queries (only touched on the thread).
  uint64_t current_seq_ = 0, finished_seq_ = 0;
  std::string current_name_ = "none";
  FlightRecorder recorder_;
  std::thread thread_;
};

}  // namespace strider::dist::detail
