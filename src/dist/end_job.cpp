#include "dist/end_job.h"

#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace strider::dist::detail {
namespace {

std::atomic<bool> ending{false};
constexpr auto kAbortGrace = std::chrono::seconds(20);

}  // namespace

void mark_job_ending() { ending.store(true); }
bool job_ending() { return ending.load(); }

void abort_job() {
  mark_job_ending();
  std::thread([] {
    std::this_thread::sleep_for(kAbortGrace);
    _exit(1);
  }).detach();
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

}  // namespace strider::dist::detail
