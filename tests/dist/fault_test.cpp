// A rank that throws mid-step must end the whole job with a message naming it, not hang the
// others in their next collective; one killed outright (--die) must end it too, with mpirun
// naming the rank; one that throws while it owns a split group too. CTest expects the messages (and a non-zero exit) within its timeout.
#include <strider/dist/mpi_process_group.h>
#include <strider/strider.h>

#include <csignal>
#include <stdexcept>
#include <string>

int main(int argc, char** argv) {
  auto pg = strider::dist::MpiProcessGroup::init(&argc, &argv);
  pg->set_timeout(std::chrono::seconds(20));
  return strider::dist::run_or_abort(pg, [&] {
    strider::Tensor t = strider::ones({8});
    pg->all_reduce(t);
    // --in-group: a split group lives in this scope; its destruction while the exception unwinds
    // must not wait in a collective the other ranks never reach (it hung the job silently).
    std::shared_ptr<strider::dist::ProcessGroup> group;
    if (argc > 1 && std::string(argv[1]) == "--in-group") group = pg->split(0, pg->rank());
    if (pg->rank() == pg->size() - 1) {
      if (argc > 1 && std::string(argv[1]) == "--die") std::raise(SIGKILL);  // no chance to say anything
      throw std::runtime_error("simulated failure in step 1");
    }
    pg->all_reduce(t);  // the other ranks wait here; the abort must end them
    return 0;
  });
}
