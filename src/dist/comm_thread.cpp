#include "dist/comm_thread.h"

#include "dist/end_job.h"
#include "dist/hash.h"

#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>
#include <vector>

namespace strider::dist::detail {
namespace {

constexpr int kQueryTag = 1, kReplyTag = 2, kFailureTag = 3, kFailureAckTag = 4;
constexpr int kMaxFailureMessage = 1024;

// A rank's answer to "where are you?": the collective it is in (0 when idle) and the last one
// it finished, with the current collective's name.
struct Status {
  uint64_t current = 0, finished = 0;
  char name[96] = {};
};

// A collective's signature as it travels between ranks (fixed size, for one all-gather).
struct WireSignature {
  uint64_t seq = 0;
  int64_t op = 0, dtype = 0, count = 0, extra = 0, step = 0;
  uint64_t label_hash = 0;
  char label[80] = {};
};

constexpr int kCompared = 6;  // seq, op, dtype, count, extra, label_hash

void compared_fields(const WireSignature& w, int64_t* out) {
  out[0] = static_cast<int64_t>(w.seq);
  out[1] = w.op;
  out[2] = w.dtype;
  out[3] = w.count;
  out[4] = w.extra;
  out[5] = static_cast<int64_t>(w.label_hash);
}

WireSignature to_wire(uint64_t seq, const CollectiveSignature& s) {
  WireSignature w;
  w.seq = seq;
  w.op = static_cast<int64_t>(s.op);
  w.dtype = s.dtype;
  w.count = s.count;
  w.extra = s.extra;
  w.step = s.step;
  w.label_hash = static_cast<uint64_t>(hash63(fnv1a(s.label)));
  std::snprintf(w.label, sizeof w.label, "%s", s.label.c_str());
  return w;
}

CollectiveSignature from_wire(const WireSignature& w) {
  CollectiveSignature s;
  s.op = static_cast<CollectiveOp>(w.op);
  s.dtype = static_cast<int32_t>(w.dtype);
  s.count = w.count;
  s.extra = w.extra;
  s.label = std::string(w.label, strnlen(w.label, sizeof w.label));
  s.step = w.step;
  return s;
}

// "rank 1 runs ...; ranks 0, 2, 3 run ..." with each distinct signature once.
std::string describe_disagreement(const std::vector<WireSignature>& all) {
  static const char* fields[kCompared] = {"collective number", "op", "dtype", "element count", "reduce op/root",
                                          "label"};
  std::vector<int> group(all.size(), -1);
  std::ostringstream msg;
  int64_t ref[kCompared], v[kCompared];
  compared_fields(all[0], ref);
  int first_field = -1;
  for (const WireSignature& w : all) {
    compared_fields(w, v);
    for (int f = 0; f < kCompared && first_field < 0; ++f)
      if (v[f] != ref[f]) first_field = f;
  }
  msg << "ranks disagree at collective #" << all[0].seq << " (they differ in its "
      << (first_field >= 0 ? fields[first_field] : "?") << "):";
  for (size_t r = 0; r < all.size(); ++r) {
    if (group[r] >= 0) continue;
    std::vector<size_t> same;
    compared_fields(all[r], ref);
    for (size_t q = r; q < all.size(); ++q) {
      compared_fields(all[q], v);
      if (std::equal(ref, ref + kCompared, v)) {
        group[q] = static_cast<int>(r);
        same.push_back(q);
      }
    }
    msg << (r ? ";" : "") << (same.size() > 1 ? " ranks " : " rank ");
    for (size_t i = 0; i < same.size(); ++i) msg << (i ? ", " : "") << same[i];
    msg << " (in or after training forward " << all[r].step << ") " << (same.size() > 1 ? "run " : "runs ") << from_wire(all[r]).describe();
  }
  msg << ". Every rank must issue the same collectives in the same order: check that all ranks got the same "
         "model, options, data size and step count, and that every rank runs each forward of a sharded model, "
         "evaluation too (its units gather their parameters from every rank)";
  return msg.str();
}

// The kernel's struct sched_attr as of its first size (48 bytes; sched_setattr(2)), under its own
// name: newer C libraries declare the struct too.
struct KernelSchedAttr {
  uint32_t size, policy;
  uint64_t flags;
  int32_t nice;
  uint32_t priority;
  uint64_t runtime, deadline, period;
};
static_assert(sizeof(KernelSchedAttr) == 48);

// A 100 us slice (read by Linux 6.12+): under EEVDF each sched_yield() of the poll pushes this
// thread's deadline a slice back, and with the default one it ran only when its compute thread
// blocked ("Gathers that moved only while compute waited", docs/benchmarks.md). Threads MPI
// starts from here inherit it. Best effort; other policies and the nice value are left alone.
void shorten_scheduler_slice() {
  KernelSchedAttr attr{};
  if (syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) != 0) return;
  if (attr.policy != SCHED_OTHER && attr.policy != SCHED_BATCH) return;
  attr.size = sizeof(attr);
  attr.flags &= 0x01;  // SCHED_FLAG_RESET_ON_FORK: clearing it would need CAP_SYS_NICE
  attr.runtime = 100'000;  // nanoseconds
  syscall(SYS_sched_setattr, 0, &attr, 0);
}

}  // namespace

void RequestWaiter::wait(MPI_Request* requests, int count) {
  owner_.wait_requests(requests, count, CommThread::Pace::Data);
}

CommThread::CommThread(MPI_Comm parent, int rank, int size, Abort abort)
    : rank_(rank), size_(size), abort_(std::move(abort)) {
  MPI_Comm_dup(parent, &data_comm_);
  MPI_Comm_dup(parent, &control_comm_);
  MPI_Comm_dup(parent, &signature_comm_);
  MPI_Comm_set_errhandler(data_comm_, MPI_ERRORS_RETURN);
  thread_ = std::thread([this] {
    // Its sleeps between polls are tens of microseconds; the default 50 us slack would double them.
    prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);  // nanoseconds
    shorten_scheduler_slice();
    loop();
  });
}

CommThread::~CommThread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    MPI_Comm_free(&data_comm_);
    MPI_Comm_free(&control_comm_);
    MPI_Comm_free(&signature_comm_);
  }
}

uint64_t CommThread::enqueue(CollectiveSignature signature, Task task, std::function<void()> done) {
  uint64_t seq;
  {
    std::lock_guard lock(mutex_);
    seq = next_seq_++;
    recorder_.queued(seq, signature);
    queue_.push_back({seq, check_signatures_.load(), std::move(signature), std::move(task), std::move(done)});
    last_enqueued_.store(seq);
  }
  cv_.notify_one();
  return seq;
}

void CommThread::loop() {
  RequestWaiter waiter(*this);
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      // Idle: wake up now and then to answer queries from ranks that are stuck waiting on us.
      while (queue_.empty() && pipeline_.empty() && !stopping_) {
        lock.unlock();
        answer_queries();
        lock.lock();
        cv_.wait_for(lock, std::chrono::milliseconds(5), [&] { return !queue_.empty() || stopping_; });
      }
      if (queue_.empty() && pipeline_.empty()) return;
    }
    post_signatures();
    run(pipeline_.front(), waiter);
    pipeline_.pop_front();
  }
}

template <class Done>
void CommThread::wait_until(Done&& done, Pace pace) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(timeout_ms_.load());
  for (int spins = 0;; ++spins) {
    if (done()) return;
    if (pace == Pace::Arrival && spins >= kArrivalSpins) {
      // A peer has not reached this collective yet (it is still computing): sleep between polls,
      // a sixteenth of the time waited so far, so this thread leaves the cores to the compute
      // threads, here and on the peers sharing them. The last arrival is noticed up to one sleep
      // late per round of the signature all-reduce (about log2 of the ranks rounds).
      const auto now = Clock::now();
      if (now > deadline) report_timeout();
      answer_queries();
      std::this_thread::sleep_for(std::clamp<Clock::duration>((now - start) / 16, kMinArrivalSleep, kMaxArrivalSleep));
      continue;
    }
    // Large transfers only move while MPI is called, so keep calling; yield so a compute thread
    // of this rank gets the core when it needs it, and sleep only when the peer is clearly away.
    if ((spins & 255) == 255) {
      const auto now = Clock::now();
      if (now > deadline) report_timeout();
      if ((spins & 4095) == 4095) answer_queries();  // a failing peer's announcement ends this wait
      if (now - start > std::chrono::milliseconds(200)) {
        answer_queries();
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        continue;
      }
    }
    std::this_thread::yield();
  }
}

void CommThread::run(Item& item, RequestWaiter& waiter) {
  current_seq_ = item.seq;
  current_name_ = item.signature.describe();
  recorder_.started(item.seq);
  if (item.checked && size_ > 1) check_signature(item, waiter);
  item.task(waiter);
  recorder_.finished(item.seq);
  finished_seq_ = item.seq;
  current_seq_ = 0;
  if (item.done) item.done();
}

void CommThread::post_signatures() {
  static_assert(kSlotFields == kCompared + 1);
  // Only this thread pops queue_, so a newer enqueued number means queue_ is not empty.
  while (pipeline_.size() < kBatchSlots && last_enqueued_.load() > last_taken_) {
    std::lock_guard lock(mutex_);
    pipeline_.push_back(std::move(queue_.front()));
    queue_.pop_front();
    last_taken_ = pipeline_.back().seq;
  }
  if (size_ == 1) return;
  if (batch_posted_) {
    int flag = 0;
    MPI_Test(&batch_request_, &flag, MPI_STATUS_IGNORE);
    if (!flag) return;
    take_batch_result();
  }
  // One all-reduce gives every field's maximum and negated minimum: equal means all agree. A slot
  // this rank has nothing for is neutral (absent: presence 0, fields the smallest value), so a
  // slot is compared when its presence's minimum is 1 on every rank alike.
  batch_seqs_.clear();
  for (const Item& item : pipeline_)
    if (item.checked && !item.compared && batch_seqs_.size() < kBatchSlots) batch_seqs_.push_back(item.seq);
  if (batch_seqs_.empty()) return;
  batch_.fill(std::numeric_limits<int64_t>::min());
  constexpr int kHalf = kBatchWords / 2;
  for (size_t slot = 0; slot < kBatchSlots; ++slot) {
    int64_t* max = batch_.data() + slot * kSlotFields;
    int64_t* neg_min = max + kHalf;
    max[0] = neg_min[0] = 0;  // absent
    if (slot >= batch_seqs_.size()) continue;
    const Item& item = pipeline_[batch_seqs_[slot] - pipeline_.front().seq];
    int64_t fields[kCompared];
    compared_fields(to_wire(item.seq, item.signature), fields);
    max[0] = 1;
    neg_min[0] = -1;
    for (int f = 0; f < kCompared; ++f) {
      max[1 + f] = fields[f];
      neg_min[1 + f] = -fields[f];
    }
  }
  MPI_Iallreduce(MPI_IN_PLACE, batch_.data(), kBatchWords, MPI_INT64_T, MPI_MAX, signature_comm_, &batch_request_);
  batch_posted_ = true;
}

void CommThread::take_batch_result() {
  batch_posted_ = false;
  constexpr int kHalf = kBatchWords / 2;
  for (size_t slot = 0; slot < batch_seqs_.size(); ++slot) {
    const int64_t* max = batch_.data() + slot * kSlotFields;
    const int64_t* neg_min = max + kHalf;
    if (neg_min[0] != -1) break;  // some rank has not queued it yet: the next batch compares it
    Item& item = pipeline_[batch_seqs_[slot] - pipeline_.front().seq];
    item.compared = true;
    item.agrees = true;
    for (int f = 1; f < kSlotFields; ++f) item.agrees = item.agrees && max[f] == -neg_min[f];
  }
}

void CommThread::check_signature(Item& item, RequestWaiter& waiter) {
  wait_until([&] {
    post_signatures();
    return item.compared;
  }, Pace::Arrival);
  if (item.agrees) return;
  // Every rank sees the same result, so all find the difference at this collective, having run
  // the same ones before it on data_comm_: the gather matches there.
  const WireSignature mine = to_wire(item.seq, item.signature);
  std::vector<WireSignature> all(static_cast<size_t>(size_));
  MPI_Request req;
  MPI_Iallgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, data_comm_, &req);
  waiter.wait(&req);
  abort_(describe_disagreement(all));
  std::abort();
}

void CommThread::wait_requests(MPI_Request* requests, int count, Pace pace) {
  int spins = 0;
  wait_until([&] {
    int flag = 0;
    MPI_Testall(count, requests, &flag, MPI_STATUSES_IGNORE);
    // Compare the signatures of collectives queued meanwhile, so they travel while this one waits.
    if (!flag && (++spins & 15) == 15) post_signatures();
    return flag != 0;
  }, pace);
}

void CommThread::announce_failure(const std::string& message, int silent_rank) {
  const std::string text = message.substr(0, kMaxFailureMessage - 1);
  std::vector<MPI_Request> sends;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || r == silent_rank) continue;
    sends.emplace_back();
    MPI_Isend(text.c_str(), static_cast<int>(text.size()) + 1, MPI_CHAR, r, kFailureTag, control_comm_,
              &sends.back());
  }
  // Each peer acknowledges once it has printed why it stops, so the abort that follows does not
  // cut its message off however loaded the machine is; a dead or stuck peer costs a bounded wait.
  std::vector<char> acks(sends.size());
  std::vector<MPI_Request> recvs;
  for (int r = 0, i = 0; r < size_; ++r)
    if (r != rank_ && r != silent_rank) MPI_Irecv(&acks[static_cast<size_t>(i++)], 1, MPI_CHAR, r, kFailureAckTag, control_comm_, &recvs.emplace_back());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int sent = 0, acknowledged = 0;
  while (!(sent && acknowledged) && std::chrono::steady_clock::now() < until) {
    if (!sent) MPI_Testall(static_cast<int>(sends.size()), sends.data(), &sent, MPI_STATUSES_IGNORE);
    if (!acknowledged) MPI_Testall(static_cast<int>(recvs.size()), recvs.data(), &acknowledged, MPI_STATUSES_IGNORE);
    acknowledge_concurrent_failures();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void CommThread::acknowledge_concurrent_failures() {
  // Ranks that found the same fault (a disagreement is seen by all) announce it at the same
  // time; each has printed its own reason, so each acknowledges the others' notices at once
  // instead of leaving them to wait out the bound.
  for (;;) {
    // A matched probe, so the comm thread's own check for notices cannot take the same one.
    int incoming = 0;
    MPI_Message notice;
    MPI_Status st;
    MPI_Improbe(MPI_ANY_SOURCE, kFailureTag, control_comm_, &incoming, &notice, &st);
    if (!incoming) return;
    char text[kMaxFailureMessage] = {};
    MPI_Mrecv(text, kMaxFailureMessage, MPI_CHAR, &notice, MPI_STATUS_IGNORE);
    const char ack = 1;
    MPI_Send(&ack, 1, MPI_CHAR, st.MPI_SOURCE, kFailureAckTag, control_comm_);
  }
}

void CommThread::answer_queries() {
  int failed = 0;
  MPI_Message notice;
  MPI_Status fst;
  MPI_Improbe(MPI_ANY_SOURCE, kFailureTag, control_comm_, &failed, &notice, &fst);
  if (failed) {
    mark_job_ending();
    char text[kMaxFailureMessage] = {};
    MPI_Mrecv(text, kMaxFailureMessage, MPI_CHAR, &notice, MPI_STATUS_IGNORE);
    std::fprintf(stderr, "strider: [rank %d of %d] stopping because rank %d failed: %s\n%s", rank_, size_,
                 fst.MPI_SOURCE, text, recorder_.tail(8).insert(0, "its last collectives here:\n").c_str());
    std::fflush(stderr);
    const char ack = 1;  // printed: the failing rank may abort the job now
    MPI_Send(&ack, 1, MPI_CHAR, fst.MPI_SOURCE, kFailureAckTag, control_comm_);
    // The failing rank aborts the job once every peer has said why; abort ourselves only if
    // that never comes (without announcing: the news came from that rank).
    std::this_thread::sleep_for(std::chrono::seconds(5));
    abort_job();
  }
  for (;;) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, control_comm_, &flag, &st);
    if (!flag) return;
    uint64_t asker_seq = 0;
    MPI_Recv(&asker_seq, 1, MPI_UINT64_T, st.MPI_SOURCE, kQueryTag, control_comm_, MPI_STATUS_IGNORE);
    Status s;
    s.current = current_seq_;
    s.finished = finished_seq_;
    std::snprintf(s.name, sizeof s.name, "%s", current_name_.c_str());
    MPI_Send(&s, sizeof s, MPI_BYTE, st.MPI_SOURCE, kReplyTag, control_comm_);  // small: sent eagerly
  }
}

void CommThread::report_timeout() {
  const uint64_t mine = current_seq_;
  std::vector<Status> replies(static_cast<size_t>(size_));
  std::vector<MPI_Request> recvs(static_cast<size_t>(size_), MPI_REQUEST_NULL);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Send(&mine, 1, MPI_UINT64_T, r, kQueryTag, control_comm_);
    MPI_Irecv(&replies[r], sizeof(Status), MPI_BYTE, r, kReplyTag, control_comm_, &recvs[r]);
  }
  // Ranks that are alive answer within milliseconds (from their idle loop or their own wait).
  const auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  std::vector<int> answered(static_cast<size_t>(size_), 0);
  while (std::chrono::steady_clock::now() < grace) {
    bool all = true;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_ || answered[r]) continue;
      MPI_Test(&recvs[r], &answered[r], MPI_STATUS_IGNORE);
      all = all && answered[r];
    }
    if (all) break;
    answer_queries();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::ostringstream msg;
  msg << current_name_ << " (collective #" << mine << ") did not complete within " << timeout_ms_.load()
      << " ms; ranks that had not arrived:";
  bool any = false;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const Status& s = replies[r];
    if (answered[r] && (s.current >= mine || s.finished >= mine)) continue;
    any = true;
    msg << " " << r;
    if (!answered[r])
      msg << " (no answer: hung, dead or stuck outside strider)";
    else if (s.current)
      msg << " (waiting in " << s.name << " #" << s.current << ")";
    else
      msg << " (computing; its last collective was #" << s.finished << ")";
    msg << ";";
  }
  if (!any) msg << " none (all ranks arrived; the transport itself is stuck)";
  abort_(msg.str());
  std::abort();
}

}  // namespace strider::dist::detail
