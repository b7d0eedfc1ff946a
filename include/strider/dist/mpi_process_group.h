#pragma once
// ProcessGroup over MPI (OpenMPI). Run the same binary under `mpirun -np N` on one machine or
// across nodes; without mpirun it is a world of size 1.
//
// Collectives run in issue order on one communication thread per process, so an async
// collective progresses while the caller computes. A collective that waits longer than
// timeout() aborts the job with a message naming it and the ranks that had not arrived.
// Before any buffer is read, the ranks compare each collective's signature (sequence number,
// op, element count, dtype, reduce op or root, label): a mismatched or missing collective ends
// the job naming the ranks, the step and what each was doing. The last 1,000 collectives of
// each rank are kept (the flight recorder) and printed when the job aborts. Every rank of the
// world sends a heartbeat to the next from a thread of its own; a rank silent for
// heartbeat_timeout() (stopped, frozen, its host gone) is named by its watcher, with what it
// last reported, and the job ends.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "strider/dist/process_group.h"

namespace strider::dist {

namespace detail {
class CommThread;
class Heartbeat;
}

enum class Collective { AllReduce, AllGather, ReduceScatter };
// Mpi: OpenMPI's own non-blocking collective. Ring: strider's ring over point-to-point with a
// reused scratch buffer. Auto: the faster one for the message size, as measured by
// bench/collectives_bench (docs/benchmarks.md).
enum class Algorithm { Auto, Mpi, Ring };

class MpiProcessGroup final : public ProcessGroup {
 public:
  // Initializes MPI once per process and returns the world group.
  static std::shared_ptr<MpiProcessGroup> init(int* argc = nullptr, char*** argv = nullptr);
  ~MpiProcessGroup() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::shared_ptr<Work> all_reduce_async(const Tensor& t, ReduceOp op) override;
  std::shared_ptr<Work> all_gather_async(const Tensor& out, const Tensor& in) override;
  std::shared_ptr<Work> reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op) override;
  std::shared_ptr<Work> all_to_all_async(const Tensor& out, const Tensor& in) override;
  std::shared_ptr<Work> shift_async(const Tensor& out, const Tensor& in, int offset) override;
  std::shared_ptr<Work> broadcast_async(const Tensor& t, int root) override;
  std::shared_ptr<Work> all_gather_pieces_async(const Tensor& out, const Tensor& in, std::vector<Piece> pieces) override;
  std::shared_ptr<Work> reduce_scatter_pieces_async(const Tensor& out, const Tensor& in, std::vector<Piece> pieces,
                                                    ReduceOp op) override;
  void barrier() override;
  std::shared_ptr<ProcessGroup> split(int color, int key) override;
  void set_timeout(std::chrono::milliseconds t) override;
  void set_heartbeat_timeout(std::chrono::milliseconds t) override;
  // On by default. Off only to measure what the checks cost: call it at the same point on every
  // rank (collectively), or the ranks' collectives no longer match.
  void set_signature_checks(bool on);

  void set_algorithm(Collective c, Algorithm a) { algorithms_[static_cast<int>(c)] = a; }
  // The algorithm Auto resolves to for a message of `bytes` (per rank's whole buffer).
  Algorithm algorithm_for(Collective c, int64_t bytes) const;

  // Prints "[rank r of n] <message>" and this rank's last collectives to stderr, then aborts
  // every rank (MPI_Abort): no rank hangs waiting for one that failed.
  [[noreturn]] void abort(const std::string& message) const override;
  void finish() override;
  // This rank's last `count` collectives, oldest first (the flight recorder), one per line.
  std::string recent_collectives(size_t count = 16) const;

 private:
  // Over `comm` (MPI_COMM_WORLD, or a communicator a split made; an MPI_Comm is an int or a
  // pointer depending on the MPI library, hence the opaque parameter).
  MpiProcessGroup(const void* comm, bool is_world);
  // abort() that does not wait for `silent_rank` to acknowledge the news (it cannot).
  [[noreturn]] void abort_without(const std::string& message, int silent_rank) const;
  int rank_, size_;
  int world_rank_, world_size_;  // for messages: an abort names the rank in the whole job
  bool is_world_;                // the world finalizes MPI when it goes
  std::shared_ptr<MpiProcessGroup> world_;  // a split group's world (kept alive while the group lives)
  Algorithm algorithms_[3] = {Algorithm::Auto, Algorithm::Auto, Algorithm::Auto};
  std::unique_ptr<detail::CommThread> comm_;
  std::unique_ptr<detail::Heartbeat> heartbeat_;  // the world's only
  std::vector<char> scratch_;  // ring buffers, only touched on the comm thread
  bool finished_ = false;
};


}  // namespace strider::dist
