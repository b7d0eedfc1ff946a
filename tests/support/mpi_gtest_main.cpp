// GoogleTest main for tests run under mpirun: rank 0 prints, a fatal failure on any rank ends the job
// naming that rank and test (RankFailureListener), and every rank exits with the worst result
// of all ranks. In a build without MPI the same tests run at world size 1.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "support/mpi_world.h"
#include "support/rank_failure_listener.h"

int main(int argc, char** argv) {
  auto& pg = strider::testing::world();
  pg = strider::dist::init_process_group(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (pg->rank() != 0) delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new strider::testing::RankFailureListener(pg));
  const int rc = RUN_ALL_TESTS();
  strider::Tensor flag = strider::full({1}, static_cast<double>(rc), strider::kInt);
  pg->all_reduce(flag, strider::dist::ReduceOp::Max);
  const int worst = flag.item<int>();
  pg.reset();
  return worst;
}
