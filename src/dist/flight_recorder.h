#pragma once
// What each collective is (its signature, which every rank must agree on before any buffer is
// read) and the flight recorder: a ring of a rank's last collectives, printed when the job
// aborts so the log shows what each rank was doing when it ended.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace strider::dist::detail {

enum class CollectiveOp : int32_t {
  AllReduce = 1, AllGather, ReduceScatter, Broadcast, AllGatherPieces, Barrier, Finish, Split, AllToAll,
  ReduceScatterPieces, Shift
};

struct CollectiveSignature {
  CollectiveOp op = CollectiveOp::Barrier;
  int32_t dtype = -1;   // a ScalarType, or -1 when no data moves
  int64_t count = 0;    // elements this rank contributes
  int64_t extra = 0;    // the reduce op, the broadcast root, the number of pieces, the shift's offset (not compared for a split's color)
  std::string label;    // CollectiveLabel::current() of the issuing thread
  int64_t step = 0;     // for messages only: not compared (ProcessGroup::step())

  // "all_reduce(sum) of 1024 float32 [unit 'h.0' gradients]"
  std::string describe() const;
};

class FlightRecorder {
 public:
  static constexpr size_t kCapacity = 1000;
  void queued(uint64_t seq, const CollectiveSignature& sig);
  void started(uint64_t seq);
  void finished(uint64_t seq);
  // The last `count` collectives, oldest first, one line each with state and timings.
  std::string tail(size_t count) const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    uint64_t seq = 0;
    CollectiveSignature sig;
    Clock::time_point queued_at, started_at, finished_at;
    bool started = false, finished = false;
  };
  Entry* find(uint64_t seq);
  mutable std::mutex mutex_;
  std::vector<Entry> ring_ = std::vector<Entry>(kCapacity);
  Clock::time_point origin_ = Clock::now();
};

}  // namespace strider::dist::detail
