// A rank that stays away from a collective longer than the timeout: the ranks waiting in it end
// the job with a message naming the collective and the rank that never arrived.
#include <strider/dist/mpi_process_group.h>
#include <strider/strider.h>

#include <thread>

int main(int argc, char** argv) {
  auto pg = strider::dist::MpiProcessGroup::init(&argc, &argv);
  pg->set_timeout(std::chrono::milliseconds(1500));
  return strider::dist::run_or_abort(pg, [&] {
    strider::Tensor t = strider::ones({8});
    pg->all_reduce(t);
    if (pg->rank() == pg->size() - 1) std::this_thread::sleep_for(std::chrono::seconds(30));  // "stuck computing"
    pg->all_gather(strider::empty({8 * pg->size()}), t);
    return 0;
  });
}
