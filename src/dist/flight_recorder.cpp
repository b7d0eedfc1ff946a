#include "dist/flight_recorder.h"

#include <cstdio>
#include <sstream>

#include "strider/core/scalar_type.h"

namespace strider::dist::detail {
namespace {

const char* op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllReduce: return "all_reduce";
    case CollectiveOp::AllGather: return "all_gather";
    case CollectiveOp::AllToAll: return "all_to_all";
    case CollectiveOp::ReduceScatter: return "reduce_scatter";
    case CollectiveOp::Broadcast: return "broadcast";
    case CollectiveOp::AllGatherPieces: return "all_gather_pieces";
    case CollectiveOp::ReduceScatterPieces: return "reduce_scatter_pieces";
    case CollectiveOp::Barrier: return "barrier";
    case CollectiveOp::Finish: return "finish";
    case CollectiveOp::Split: return "split";
    case CollectiveOp::Shift: return "shift";
  }
  return "unknown";
}

const char* reduce_name(int64_t op) {
  static const char* names[] = {"sum", "avg", "max"};
  return op >= 0 && op < 3 ? names[op] : "?";
}

double ms(std::chrono::steady_clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

std::string CollectiveSignature::describe() const {
  std::ostringstream s;
  s << op_name(op);
  if (op == CollectiveOp::AllReduce || op == CollectiveOp::ReduceScatter || op == CollectiveOp::ReduceScatterPieces)
    s << "(" << reduce_name(extra) << ")";
  if (op == CollectiveOp::Broadcast) s << "(root " << extra << ")";
  if (op == CollectiveOp::AllGatherPieces) s << "(" << extra << " pieces)";
  if (op == CollectiveOp::Finish) s << " (its work ended)";
  if (dtype >= 0) s << " of " << count << " " << static_cast<ScalarType>(dtype);
  if (!label.empty()) s << " [" << label << "]";
  return s.str();
}

FlightRecorder::Entry* FlightRecorder::find(uint64_t seq) {
  Entry& e = ring_[seq % kCapacity];
  return e.seq == seq ? &e : nullptr;
}

void FlightRecorder::queued(uint64_t seq, const CollectiveSignature& sig) {
  std::lock_guard lock(mutex_);
  ring_[seq % kCapacity] = Entry{seq, sig, Clock::now(), {}, {}, false, false};
}

void FlightRecorder::started(uint64_t seq) {
  std::lock_guard lock(mutex_);
  if (Entry* e = find(seq)) {
    e->started = true;
    e->started_at = Clock::now();
  }
}

void FlightRecorder::finished(uint64_t seq) {
  std::lock_guard lock(mutex_);
  if (Entry* e = find(seq)) {
    e->finished = true;
    e->finished_at = Clock::now();
  }
}

std::string FlightRecorder::tail(size_t count) const {
  std::lock_guard lock(mutex_);
  uint64_t last = 0;
  for (const Entry& e : ring_) last = std::max(last, e.seq);
  std::ostringstream s;
  const uint64_t first = last > count ? last - count + 1 : 1;
  for (uint64_t seq = first; seq <= last && last > 0; ++seq) {
    const Entry& e = ring_[seq % kCapacity];
    if (e.seq != seq) continue;
    char times[96];
    if (e.finished)
      std::snprintf(times, sizeof times, "done in %.2f ms", ms(e.finished_at - e.started_at));
    else if (e.started)
      std::snprintf(times, sizeof times, "RUNNING for %.0f ms", ms(Clock::now() - e.started_at));
    else
      std::snprintf(times, sizeof times, "queued for %.0f ms", ms(Clock::now() - e.queued_at));
    s << "  #" << seq << " forward " << e.sig.step << " " << e.sig.describe() << ": " << times << " (issued at +"
      << static_cast<int64_t>(ms(e.queued_at - origin_)) << " ms)\n";
  }
  return s.str();
}

}  // namespace strider::dist::detail
