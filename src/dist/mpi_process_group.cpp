// MPI collectives, run on the comm thread: OpenMPI's non-blocking collectives or strider's
// rings, chosen per collective and size (algorithm_for).
#include "strider/dist/mpi_process_group.h"

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <vector>

#include "strider/core/reduced_float.h"
#include "dist/buffer_math.h"
#include "dist/comm_thread.h"
#include "dist/end_job.h"
#include "dist/heartbeat.h"
#include "dist/ring.h"

namespace strider::dist {
namespace {

// bfloat16/float16 travel as 16-bit words; reductions on them use these user ops.
template <class T, bool kMax>
void reduce16(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<const T*>(in);
  auto* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = static_cast<float>(a[i]), y = static_cast<float>(b[i]);
    store_as(b[i], kMax ? (x > y ? x : y) : x + y);
  }
}

struct Ops16 {
  MPI_Op bf16_sum, bf16_max, f16_sum, f16_max;
};

Ops16& ops16() {
  static Ops16 o = [] {
    Ops16 r;
    MPI_Op_create(&reduce16<BFloat16, false>, 1, &r.bf16_sum);
    MPI_Op_create(&reduce16<BFloat16, true>, 1, &r.bf16_max);
    MPI_Op_create(&reduce16<Half, false>, 1, &r.f16_sum);
    MPI_Op_create(&reduce16<Half, true>, 1, &r.f16_max);
    return r;
  }();
  return o;
}

MPI_Datatype mpi_type(ScalarType t) {
  switch (t) {
    case kFloat: return MPI_FLOAT;
    case kDouble: return MPI_DOUBLE;
    case kLong: return MPI_INT64_T;
    case kInt: return MPI_INT32_T;
    case kByte: return MPI_UINT8_T;
    case kBool: return MPI_C_BOOL;
    case kBFloat16: case kHalf: return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(ScalarType t, ReduceOp op) {
  const bool max = op == ReduceOp::Max;
  if (t == kBFloat16) return max ? ops16().bf16_max : ops16().bf16_sum;
  if (t == kHalf) return max ? ops16().f16_max : ops16().f16_sum;
  return max ? MPI_MAX : MPI_SUM;
}

void check_dense(const Tensor& t, const char* op) {
  STRIDER_CHECK(t.defined(), op, "the tensor is undefined (an empty Tensor()); pass one with memory");
  STRIDER_CHECK(t.is_non_overlapping_and_dense(), op, "collectives need dense tensors, got ",
                t.defined() ? t.sizes() : IntArrayRef(), "@", t.defined() ? t.strides() : IntArrayRef(),
                "; call .contiguous() first");
  STRIDER_CHECK(t.numel() < (int64_t{1} << 31), op, "tensor of ", t.numel(), " elements exceeds MPI's int count");
}

// Completed by the comm thread; the caller blocks on it. The comm thread enforces the timeout
// (it is the one waiting on MPI), so wait() itself needs none.
class QueuedWork final : public Work {
 public:
  void complete() {
    std::lock_guard lock(mutex_);
    done_.store(true);
    cv_.notify_all();
  }
  bool is_completed() override { return done_.load(); }
  void wait() override {
    if (done_.load()) return;
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return done_.load(); });
  }

 private:
  std::atomic<bool> done_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
};

void check_rc(int rc, const MpiProcessGroup* pg, const char* op) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    pg->abort(std::string(op) + " failed: " + std::string(msg, static_cast<size_t>(len)));
  }
}

}  // namespace

std::shared_ptr<MpiProcessGroup> MpiProcessGroup::init(int* argc, char*** argv) {
  // MPI initializes once per process, so the world group is process state. It is not a Context
  // slot: its destructor, at exit, finalizes MPI, and the Context is never destroyed.
  static std::shared_ptr<MpiProcessGroup> world;
  if (world) return world;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // The comm thread makes the MPI calls while other threads may call MPI_Abort.
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const MPI_Comm comm = MPI_COMM_WORLD;
  world = std::shared_ptr<MpiProcessGroup>(new MpiProcessGroup(&comm, true));
  MpiProcessGroup* w = world.get();
  w->heartbeat_ = std::make_unique<detail::Heartbeat>(
      comm, w->rank_, w->size_, w->heartbeat_timeout(),
      [w] { return "in or after training forward " + std::to_string(w->step()) + "; its last collectives:\n" + w->comm_->recorder().tail(4); },
      [w](const std::string& message, int silent_rank) { w->abort_without(message, silent_rank); });
  return world;
}

MpiProcessGroup::MpiProcessGroup(const void* comm, bool is_world) : is_world_(is_world) {
  const MPI_Comm c = *static_cast<const MPI_Comm*>(comm);
  MPI_Comm_rank(c, &rank_);
  MPI_Comm_size(c, &size_);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
  comm_ = std::make_unique<detail::CommThread>(c, rank_, size_, [this](const std::string& m) { abort(m); });
  comm_->set_timeout(timeout_);
  if (!is_world) world_ = init();  // a failure is announced to the whole job, not only this group
}

MpiProcessGroup::~MpiProcessGroup() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // Destroyed while an exception unwinds (a group owned inside run_or_abort's function): no
  // collective here, whose peers may wait in another group's; the exception goes on to
  // run_or_abort, which announces it to every rank.
  if (!finished_ && !finalized && std::uncaught_exceptions() == 0) finish();
  heartbeat_.reset();
  comm_.reset();
  MPI_Finalized(&finalized);
  if (is_world_ && !finalized) MPI_Finalize();
}

void MpiProcessGroup::set_timeout(std::chrono::milliseconds t) {
  ProcessGroup::set_timeout(t);
  comm_->set_timeout(t);
}

void MpiProcessGroup::set_heartbeat_timeout(std::chrono::milliseconds t) {
  ProcessGroup::set_heartbeat_timeout(t);
  if (heartbeat_) heartbeat_->set_timeout(t);
}

void MpiProcessGroup::set_signature_checks(bool on) { comm_->set_signature_checks(on); }

void MpiProcessGroup::abort(const std::string& message) const { abort_without(message, -1); }

void MpiProcessGroup::abort_without(const std::string& message, int silent_rank) const {
  const std::string where = is_world_ ? "" : " (rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                                                 " in a group split from the world)";
  std::fprintf(stderr, "strider: [rank %d of %d]%s %s; aborting all ranks\n[rank %d] its last collectives:\n%s",
               world_rank_, world_size_, where.c_str(), message.c_str(), world_rank_, comm_->recorder().tail(16).c_str());
  std::fflush(stderr);
  detail::mark_job_ending();
  // Tell the others why (once, if two threads fail together).
  static std::atomic<bool> announced{false};
  detail::CommThread& announcer = is_world_ ? *comm_ : *world_->comm_;
  if (world_size_ > 1 && !announced.exchange(true))
    announcer.announce_failure("[rank " + std::to_string(world_rank_) + " of " + std::to_string(world_size_) + "]" + where +
                                   " " + message,
                               silent_rank);
  detail::abort_job();
}

// Chosen from bench/collectives_bench on this machine (docs/benchmarks.md): OpenMPI's
// all-gather is as fast as the ring, its reduce-scatter is not; all-reduce is latency-bound
// below 256 KiB, where OpenMPI's recursive doubling wins.
Algorithm MpiProcessGroup::algorithm_for(Collective c, int64_t bytes) const {
  const Algorithm chosen = algorithms_[static_cast<int>(c)];
  if (chosen != Algorithm::Auto) return chosen;
  switch (c) {
    case Collective::AllGather: return Algorithm::Mpi;
    case Collective::ReduceScatter: return Algorithm::Ring;
    case Collective::AllReduce: return bytes < (int64_t{256} << 10) ? Algorithm::Mpi : Algorithm::Ring;
  }
  return Algorithm::Mpi;
}

namespace {

detail::CollectiveSignature signature(detail::CollectiveOp op, const Tensor* t, int64_t extra, int64_t step) {
  detail::CollectiveSignature s;
  s.op = op;
  if (t) {
    s.dtype = static_cast<int32_t>(t->dtype());
    s.count = t->numel();
  }
  s.extra = extra;
  s.label = CollectiveLabel::current();
  s.step = step;
  return s;
}

std::shared_ptr<Work> submit(detail::CommThread& comm, detail::CollectiveSignature sig, detail::CommThread::Task task) {
  auto work = std::make_shared<QueuedWork>();
  comm.enqueue(std::move(sig), std::move(task), [work] { work->complete(); });
  return work;
}

}  // namespace

std::shared_ptr<Work> MpiProcessGroup::all_reduce_async(const Tensor& t, ReduceOp op) {
  detail::mark_written(t);
  check_dense(t, "all_reduce");
  detail::check_reducible(t.dtype(), "all_reduce");
  const Algorithm algo = algorithm_for(Collective::AllReduce, t.nbytes());
  return submit(*comm_, signature(detail::CollectiveOp::AllReduce, &t, static_cast<int64_t>(op), step()), [this, t, op, algo](detail::RequestWaiter& waiter) {
    const MPI_Op mop = mpi_op(t.dtype(), op == ReduceOp::Avg ? ReduceOp::Sum : op);
    if (algo == Algorithm::Ring && size_ > 1) {
      const auto blocks = detail::split_blocks(t.numel(), size_);
      const int64_t item = static_cast<int64_t>(element_size(t.dtype()));
      detail::RingContext c{comm_->data_comm(), rank_, size_, waiter, scratch_, bytes_sent_};
      char* base = static_cast<char*>(t.data());
      detail::ring_reduce_scatter(c, base, base + blocks[rank_] * item, blocks, t.dtype(), op);
      detail::ring_all_gather(c, base, blocks, t.dtype());
    } else {
      MPI_Request req;
      check_rc(MPI_Iallreduce(MPI_IN_PLACE, t.data(), static_cast<int>(t.numel()), mpi_type(t.dtype()), mop,
                              comm_->data_comm(), &req), this, "all_reduce");
      waiter.wait(&req);
      bytes_sent_ += 2 * t.nbytes() * (size_ - 1) / size_;
      if (op == ReduceOp::Avg && size_ > 1) detail::scale_in_place(t, 1.0 / size_);
    }
  });
}

std::shared_ptr<Work> MpiProcessGroup::all_gather_async(const Tensor& out, const Tensor& in) {
  detail::mark_written(out);
  check_dense(out, "all_gather");
  check_dense(in, "all_gather");
  detail::check_block_layout(out, "all_gather", "output");
  detail::check_block_layout(in, "all_gather", "input");
  STRIDER_CHECK(out.dtype() == in.dtype() && out.numel() == in.numel() * size_, "all_gather", "output of ",
                out.numel(), " ", out.dtype(), " elements cannot hold ", size_, " x ", in.numel(), " ", in.dtype());
  const Algorithm algo = algorithm_for(Collective::AllGather, out.nbytes());
  const bool in_place = detail::gathers_in_place(out, in, rank_, "all_gather");
  return submit(*comm_, signature(detail::CollectiveOp::AllGather, &in, 0, step()), [this, out, in, algo, in_place](detail::RequestWaiter& waiter) {
    if (algo == Algorithm::Ring) {
      const size_t bytes = in.nbytes();
      if (!in_place) std::memcpy(static_cast<char*>(out.data()) + rank_ * bytes, in.data(), bytes);
      detail::RingContext c{comm_->data_comm(), rank_, size_, waiter, scratch_, bytes_sent_};
      detail::ring_all_gather(c, out.data(), detail::even_blocks(in.numel(), size_), in.dtype());
      return;
    }
    MPI_Request req;
    check_rc(MPI_Iallgather(in_place ? MPI_IN_PLACE : in.data(), static_cast<int>(in.numel()), mpi_type(in.dtype()), out.data(),
                            static_cast<int>(in.numel()), mpi_type(out.dtype()), comm_->data_comm(), &req),
             this, "all_gather");
    waiter.wait(&req);
    bytes_sent_ += in.nbytes() * (size_ - 1);
  });
}

std::shared_ptr<Work> MpiProcessGroup::all_to_all_async(const Tensor& out, const Tensor& in) {
  detail::mark_written(out);
  check_dense(out, "all_to_all");
  check_dense(in, "all_to_all");
  detail::check_block_layout(out, "all_to_all", "output");
  detail::check_block_layout(in, "all_to_all", "input");
  STRIDER_CHECK(out.dtype() == in.dtype() && out.numel() == in.numel() && in.numel() % size_ == 0, "all_to_all",
                "input and output must hold ", size_, " equal blocks of one dtype; got ", in.numel(), " ", in.dtype(),
                " and ", out.numel(), " ", out.dtype(), " elements");
  return submit(*comm_, signature(detail::CollectiveOp::AllToAll, &in, 0, step()), [this, out, in](detail::RequestWaiter& waiter) {
    detail::RingContext c{comm_->data_comm(), rank_, size_, waiter, scratch_, bytes_sent_};
    detail::pairwise_all_to_all(c, in.data(), out.data(), in.nbytes() / size_);
  });
}

std::shared_ptr<Work> MpiProcessGroup::shift_async(const Tensor& out, const Tensor& in, int offset) {
  detail::mark_written(out);
  check_dense(out, "shift");
  check_dense(in, "shift");
  detail::check_same_layout(out, in, "shift");
  STRIDER_CHECK(out.dtype() == in.dtype() && out.numel() == in.numel(), "shift", "output of ", out.numel(), " ",
                out.dtype(), " elements does not match the input's ", in.numel(), " ", in.dtype());
  const int k = ((offset % size_) + size_) % size_;
  return submit(*comm_, signature(detail::CollectiveOp::Shift, &in, k, step()), [this, out, in, k](detail::RequestWaiter& waiter) {
    if (k == 0) {
      detail::copy_dense(out, in);
      return;
    }
    detail::RingContext c{comm_->data_comm(), rank_, size_, waiter, scratch_, bytes_sent_};
    detail::exchange(c, static_cast<const char*>(in.data()), static_cast<int64_t>(in.nbytes()),
                     static_cast<char*>(out.data()), static_cast<int64_t>(out.nbytes()), (rank_ + k) % size_,
                     (rank_ - k + size_) % size_);
  });
}

std::shared_ptr<Work> MpiProcessGroup::reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op) {
  detail::mark_written(out);
  check_dense(out, "reduce_scatter");
  check_dense(in, "reduce_scatter");
  detail::check_block_layout(out, "reduce_scatter", "output");
  detail::check_block_layout(in, "reduce_scatter", "input");
  detail::check_reducible(in.dtype(), "reduce_scatter");
  STRIDER_CHECK(out.dtype() == in.dtype() && in.numel() == out.numel() * size_, "reduce_scatter", "input of ",
                in.numel(), " ", in.dtype(), " elements does not split into ", size_, " blocks of ", out.numel(),
                " ", out.dtype());
  const Algorithm algo = algorithm_for(Collective::ReduceScatter, in.nbytes());
  return submit(*comm_, signature(detail::CollectiveOp::ReduceScatter, &out, static_cast<int64_t>(op), step()), [this, out, in, op, algo](detail::RequestWaiter& waiter) {
    const ReduceOp base_op = op == ReduceOp::Avg ? ReduceOp::Sum : op;
    if (algo == Algorithm::Ring) {
      detail::RingContext c{comm_->data_comm(), rank_, size_, waiter, scratch_, bytes_sent_};
      detail::ring_reduce_scatter(c, in.data(), out.data(), detail::even_blocks(out.numel(), size_), in.dtype(), op);
    } else {
      MPI_Request req;
      check_rc(MPI_Ireduce_scatter_block(in.data(), out.data(), static_cast<int>(out.numel()), mpi_type(in.dtype()),
                                         mpi_op(in.dtype(), base_op), comm_->data_comm(), &req),
               this, "reduce_scatter");
      waiter.wait(&req);
      bytes_sent_ += out.nbytes() * (size_ - 1);
      if (op == ReduceOp::Avg && size_ > 1) detail::scale_in_place(out, 1.0 / size_);
    }
  });
}

std::shared_ptr<Work> MpiProcessGroup::broadcast_async(const Tensor& t, int root) {
  detail::mark_written(t);
  check_dense(t, "broadcast");
  STRIDER_CHECK(root >= 0 && root < size_, "broadcast", "root ", root, " is not a rank of a world of size ", size_);
  return submit(*comm_, signature(detail::CollectiveOp::Broadcast, &t, root, step()), [this, t, root](detail::RequestWaiter& waiter) {
    MPI_Request req;
    check_rc(MPI_Ibcast(t.data(), static_cast<int>(t.numel()), mpi_type(t.dtype()), root, comm_->data_comm(), &req),
             this, "broadcast");
    waiter.wait(&req);
    if (rank_ == root) bytes_sent_ += t.nbytes();
  });
}

std::shared_ptr<Work> MpiProcessGroup::all_gather_pieces_async(const Tensor& out, const Tensor& in,
                                                               std::vector<Piece> pieces) {
  detail::mark_written(out);
  detail::check_pieces(out, in, pieces, size_);
  const int64_t npieces = static_cast<int64_t>(pieces.size());
  return submit(*comm_, signature(detail::CollectiveOp::AllGatherPieces, &in, npieces, step()),
                [this, out, in, pieces = std::move(pieces)](detail::RequestWaiter& waiter) {
    const size_t item = element_size(in.dtype());
    detail::RingContext c{comm_->data_comm(), rank_, size_, waiter, scratch_, bytes_sent_};
    if (detail::gathers_in_place(pieces, item)) {
      detail::ring_all_gather_pieces(c, in.data(), out.data(), pieces, item);
      return;
    }
    detail::ring_all_gather_segments(c, in.data(), in.nbytes(), [&](const void* segment, int q) {
      detail::scatter_pieces(out.data(), segment, pieces, q, item);
    });
  });
}

std::shared_ptr<Work> MpiProcessGroup::reduce_scatter_pieces_async(const Tensor& out, const Tensor& in,
                                                                   std::vector<Piece> pieces, ReduceOp op) {
  detail::mark_written(out);
  detail::check_pieces(in, out, pieces, size_, "reduce_scatter_pieces");
  detail::check_reducible(in.dtype(), "reduce_scatter_pieces");
  const Algorithm algo = algorithm_for(Collective::ReduceScatter, out.nbytes() * size_);
  return submit(*comm_, signature(detail::CollectiveOp::ReduceScatterPieces, &out, static_cast<int64_t>(op), step()),
                [this, out, in, op, algo, pieces = std::move(pieces)](detail::RequestWaiter& waiter) {
    const ReduceOp base_op = op == ReduceOp::Avg ? ReduceOp::Sum : op;
    const size_t item = element_size(in.dtype());
    if (algo == Algorithm::Ring) {
      detail::RingContext c{comm_->data_comm(), rank_, size_, waiter, scratch_, bytes_sent_};
      detail::ring_reduce_scatter_pieces(c, in.data(), pieces, out.data(), in.dtype(), op);
    } else {  // OpenMPI's reduce-scatter takes rank-major blocks: pack them
      Tensor packed = detail::flat_buffer(out.numel() * size_, in.dtype());
      for (int q = 0; q < size_; ++q)
        detail::gather_pieces(static_cast<char*>(packed.data()) + static_cast<size_t>(q * out.numel()) * item, in.data(),
                              pieces, q, item);
      MPI_Request req;
      check_rc(MPI_Ireduce_scatter_block(packed.data(), out.data(), static_cast<int>(out.numel()),
                                         mpi_type(in.dtype()), mpi_op(in.dtype(), base_op), comm_->data_comm(), &req),
               this, "reduce_scatter_pieces");
      waiter.wait(&req);
      bytes_sent_ += out.nbytes() * (size_ - 1);
      if (op == ReduceOp::Avg && size_ > 1) detail::scale_in_place(out, 1.0 / size_);
    }
  });
}

void MpiProcessGroup::barrier() {
  submit(*comm_, signature(detail::CollectiveOp::Barrier, nullptr, 0, step()), [this](detail::RequestWaiter& waiter) {
    MPI_Request req;
    check_rc(MPI_Ibarrier(comm_->data_comm(), &req), this, "barrier");
    waiter.wait(&req);
  })->wait();
}

std::shared_ptr<ProcessGroup> MpiProcessGroup::split(int color, int key) {
  STRIDER_CHECK(color >= 0, "split", "color must be >= 0, got ", color);
  std::shared_ptr<MpiProcessGroup> group;
  // The ranks have agreed that this collective is a split (the signature check) before the
  // blocking MPI_Comm_split and the new group's MPI_Comm_dup run, so neither can hang.
  submit(*comm_, signature(detail::CollectiveOp::Split, nullptr, 0, step()), [&](detail::RequestWaiter&) {
    MPI_Comm sub = MPI_COMM_NULL;
    check_rc(MPI_Comm_split(comm_->data_comm(), color, key, &sub), this, "split");
    group = std::shared_ptr<MpiProcessGroup>(new MpiProcessGroup(&sub, false));
    MPI_Comm_free(&sub);  // the group communicates over its own duplicates
  })->wait();
  group->set_timeout(timeout());
  return group;
}

void MpiProcessGroup::finish() {
  finished_ = true;
  if (size_ == 1) return;
  // Only the signature check runs: a rank whose peers still wait in a collective meets their
  // signature here and the job ends naming both.
  submit(*comm_, signature(detail::CollectiveOp::Finish, nullptr, 0, step()), [](detail::RequestWaiter&) {})->wait();
  // Every rank has arrived: silence from here on is a rank ending, not a freeze.
  if (heartbeat_) heartbeat_->stop();
}

std::string MpiProcessGroup::recent_collectives(size_t count) const { return comm_->recorder().tail(count); }

}  // namespace strider::dist
