#pragma once
// ProcessGroup: the collectives data-parallel training needs, over tensors of any supported dtype
// (bfloat16 included). Every collective has a blocking form and an async form returning a Work
// handle, so communication can overlap computation. Passed explicitly, never a global.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "strider/core/tensor.h"

namespace strider::dist {

enum class ReduceOp { Sum, Avg, Max };

// A run of `length` elements per rank: rank q's copy lives at offset + q * length (elements).
// This is how a tensor split along dim 0 into one equal piece per rank is laid out when whole.
struct Piece {
  int64_t offset = 0, length = 0;
};

class Work {
 public:
  virtual ~Work() = default;
  // Blocks until the collective finished (a timed-out collective aborts the job with a message).
  virtual void wait() = 0;
  virtual bool is_completed() = 0;
};

// What a collective is doing, for the messages that name a disagreeing or missing rank: set on
// the calling thread around the collectives it issues ("unit 'h.0' gather", "loss average").
// Ranks must use the same labels for the same collectives: the label is part of what they
// compare before each collective.
class CollectiveLabel {
 public:
  explicit CollectiveLabel(std::string label);
  ~CollectiveLabel();
  CollectiveLabel(const CollectiveLabel&) = delete;
  CollectiveLabel& operator=(const CollectiveLabel&) = delete;
  // The innermost label of this thread ("" when none).
  static const std::string& current();

 private:
  std::string previous_;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // In place over every rank's `t` (dense tensors).
  virtual std::shared_ptr<Work> all_reduce_async(const Tensor& t, ReduceOp op) = 0;
  // `out` (numel = size() * in.numel()) receives every rank's `in`, rank-major.
  virtual std::shared_ptr<Work> all_gather_async(const Tensor& out, const Tensor& in) = 0;
  // `in` (numel = size() * out.numel()) is reduced across ranks; rank r keeps block r in `out`.
  virtual std::shared_ptr<Work> reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op) = 0;
  // `in` and `out` hold size() equal blocks: block q of `in` goes to rank q, block q of `out`
  // comes from rank q (deterministic mode reduces exactly what each rank sent it).
  virtual std::shared_ptr<Work> all_to_all_async(const Tensor& out, const Tensor& in) = 0;
  virtual std::shared_ptr<Work> broadcast_async(const Tensor& t, int root) = 0;
  // Every rank r sends `in` to rank (r + offset) mod size() and receives into `out` (the same
  // numel and dtype) what rank (r - offset) mod size() sent; offset the same on every rank. The
  // in-memory snapshot hands each rank's state to a partner on another host with it.
  virtual std::shared_ptr<Work> shift_async(const Tensor& out, const Tensor& in, int offset) = 0;
  // All-gather of several dim-0-sharded tensors at once: `in` holds this rank's pieces back to
  // back (sum of lengths elements); on completion rank q's piece j is at
  // out[pieces[j].offset + q * pieces[j].length] on every rank. One collective, no staging
  // buffer the size of `out` (FSDP gathers a unit's parameters with it).
  virtual std::shared_ptr<Work> all_gather_pieces_async(const Tensor& out, const Tensor& in,
                                                        std::vector<Piece> pieces) = 0;
  // Its inverse: `in` is laid out as all_gather_pieces' output (rank q's piece j at
  // in[pieces[j].offset + q * pieces[j].length]); `out` (sum of lengths elements) receives this
  // rank's pieces, reduced across ranks, back to back. The same sums, in the same order, as
  // reduce_scatter of the rank-major packing of `in`, without making that packing (FSDP reduces
  // a unit's gradients from the buffer they accumulated in, laid out like the parameters).
  virtual std::shared_ptr<Work> reduce_scatter_pieces_async(const Tensor& out, const Tensor& in,
                                                            std::vector<Piece> pieces, ReduceOp op) = 0;
  virtual void barrier() = 0;
  // Collective over this group: the ranks that pass the same `color` (>= 0) form a new group,
  // ordered by `key` and then by their rank here (MPI_Comm_split). Every collective works on the
  // new group as on this one; hybrid sharding uses one group of shards and one of replicas.
  virtual std::shared_ptr<ProcessGroup> split(int color, int key) = 0;

  void all_reduce(const Tensor& t, ReduceOp op = ReduceOp::Sum) { all_reduce_async(t, op)->wait(); }
  void all_gather(const Tensor& out, const Tensor& in) { all_gather_async(out, in)->wait(); }
  void reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op = ReduceOp::Sum) {
    reduce_scatter_async(out, in, op)->wait();
  }
  void all_to_all(const Tensor& out, const Tensor& in) { all_to_all_async(out, in)->wait(); }
  void broadcast(const Tensor& t, int root = 0) { broadcast_async(t, root)->wait(); }
  void shift(const Tensor& out, const Tensor& in, int offset) { shift_async(out, in, offset)->wait(); }

  // A collective waiting longer than this aborts the whole job, naming the collective.
  virtual void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  // A rank that sends no heartbeat for this long (its process stopped or frozen, its host gone)
  // ends the job, named by the rank that watches it. Only the world has a heartbeat.
  virtual void set_heartbeat_timeout(std::chrono::milliseconds t) { heartbeat_timeout_ = t; }
  std::chrono::milliseconds heartbeat_timeout() const { return heartbeat_timeout_; }

  // The training forward messages name ("training forward 12"): DDP and FSDP count the forwards
  // this process ran in training mode, micro-batches included, so it is not the optimizer step.
  void set_step(int64_t step) { step_.store(step); }
  int64_t step() const { return step_.load(); }

  // Bytes this rank has sent in this group's collectives: counted per message on the rings; MPI's
  // own collectives (small all-reduces, all-gathers, broadcasts) count the volume a
  // bandwidth-optimal algorithm sends, as they do not report theirs.
  int64_t bytes_sent() const { return bytes_sent_.load(); }

  // Ends the job because this rank failed: with MPI, prints "[rank r of n] message" and the
  // rank's recent collectives, tells every other rank why, and aborts them all (no rank waits
  // for one that failed). In a single process there is nobody to tell: throws Error(message).
  [[noreturn]] virtual void abort(const std::string& message) const;
  // Called where a rank's work ends (run_or_abort does): with MPI, checks that every rank ended
  // with the same collectives behind it, so a rank still waiting in one is named, not left
  // hanging. Nothing to check in a single process.
  virtual void finish() {}

 protected:
  std::chrono::milliseconds timeout_{std::chrono::minutes(10)};
  std::chrono::milliseconds heartbeat_timeout_{std::chrono::seconds(30)};
  std::atomic<int64_t> step_{0};
  std::atomic<int64_t> bytes_sent_{0};
};

struct ProcessGroupOptions {
  // A collective that waits longer than this ends the job naming the ranks that never arrived.
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  // A rank silent this long (no heartbeat: stopped, frozen, its host unreachable) ends the job,
  // named. Independent of the collectives, so a merely slow rank is not taken for frozen.
  std::chrono::milliseconds heartbeat_timeout{std::chrono::seconds(30)};
};

// The world: MpiProcessGroup when strider was built with MPI (under mpirun, or a world of size
// 1 without it), else SingleProcessGroup. argc/argv may be null.
std::shared_ptr<ProcessGroup> init_process_group(int* argc = nullptr, char*** argv = nullptr,
                                                 const ProcessGroupOptions& options = {});

// Runs fn(); if it throws (anything), ends the job through pg.abort with the error's text. On
// success with MPI, also checks that every rank finished here too: a rank that still waits in a
// collective is named instead of left hanging.
int run_or_abort(ProcessGroup& pg, const std::function<int()>& fn);
inline int run_or_abort(const std::shared_ptr<ProcessGroup>& pg, const std::function<int()>& fn) {
  return run_or_abort(*pg, fn);
}

// World size 1: every collective is a local copy. Lets the same training code run without MPI.
class SingleProcessGroup final : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::shared_ptr<Work> all_reduce_async(const Tensor& t, ReduceOp op) override;
  std::shared_ptr<Work> all_gather_async(const Tensor& out, const Tensor& in) override;
  std::shared_ptr<Work> reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op) override;
  std::shared_ptr<Work> all_to_all_async(const Tensor& out, const Tensor& in) override;
  std::shared_ptr<Work> broadcast_async(const Tensor& t, int root) override;
  std::shared_ptr<Work> shift_async(const Tensor& out, const Tensor& in, int offset) override;
  std::shared_ptr<Work> all_gather_pieces_async(const Tensor& out, const Tensor& in, std::vector<Piece> pieces) override;
  std::shared_ptr<Work> reduce_scatter_pieces_async(const Tensor& out, const Tensor& in, std::vector<Piece> pieces,
                                                    ReduceOp op) override;
  void barrier() override {}
  std::shared_ptr<ProcessGroup> split(int color, int key) override;
};

}  // namespace strider::dist
