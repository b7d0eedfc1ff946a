// The heartbeat. --stop: the last rank stops its own process (SIGSTOP) between two collectives;
// with a 10-minute collective timeout only the heartbeat can end the job, and its watcher must
// name it within the 2 s heartbeat timeout (plus the abort). --slow: the last rank computes for
// three heartbeat timeouts between two collectives; a slow rank goes on beating, so the job
// finishes.
#include <signal.h>

#include <strider/dist/mpi_process_group.h>
#include <strider/strider.h>

#include <cstdio>
#include <cstring>
#include <thread>

int main(int argc, char** argv) {
  const bool stop = argc > 1 && std::strcmp(argv[1], "--stop") == 0;
  auto pg = strider::dist::init_process_group(
      &argc, &argv, {.timeout = std::chrono::minutes(10), .heartbeat_timeout = std::chrono::seconds(2)});
  return strider::dist::run_or_abort(pg, [&] {
    strider::Tensor t = strider::ones({8});
    {
      strider::dist::CollectiveLabel label("before the pause");
      pg->all_reduce(t);
    }
    if (pg->rank() == pg->size() - 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a few beats go out
      if (stop) raise(SIGSTOP);                                  // frozen: nothing of this process runs
      else std::this_thread::sleep_for(std::chrono::seconds(6));  // slow: only the main thread waits
    }
    pg->all_gather(strider::empty({8 * pg->size()}), t);
    if (pg->rank() == 0) std::printf("the slow rank was not taken for frozen\n");
    return 0;
  });
}
