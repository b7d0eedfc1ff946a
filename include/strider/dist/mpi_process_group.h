#pragma once
// ProcessGroup over MPI (OpenMPI). Run the same binary under `mpirun -np N` on one machine or
// across nodes; without mpirun it is a world of size 1.
#include <functional>
#include <memory>
#include <string>

#include "strider/dist/process_group.h"

namespace strider::dist {

class MpiProcessGroup final : public ProcessGroup {
 public:
  // Initializes MPI once per process (thread level "serialized") and returns the world group.
  static std::shared_ptr<MpiProcessGroup> init(int* argc = nullptr, char*** argv = nullptr);
  ~MpiProcessGroup() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::shared_ptr<Work> all_reduce_async(const Tensor& t, ReduceOp op) override;
  std::shared_ptr<Work> all_gather_async(const Tensor& out, const Tensor& in) override;
  std::shared_ptr<Work> reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op) override;
  std::shared_ptr<Work> broadcast_async(const Tensor& t, int root) override;
  void barrier() override;

  // Prints "[rank r] <message>" to stderr and aborts every rank (MPI_Abort): no rank hangs
  // waiting for one that failed.
  [[noreturn]] void abort(const std::string& message) const;

 private:
  MpiProcessGroup(int rank, int size) : rank_(rank), size_(size) {}
  int rank_, size_;
};

// Runs fn(); if it throws, aborts the whole MPI job with the error and this rank's number.
int run_or_abort(const std::shared_ptr<MpiProcessGroup>& pg, const std::function<int()>& fn);

}  // namespace strider::dist
