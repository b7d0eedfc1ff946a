// A test that fails on one rank while its peer waits in a collective: the rank's failure ends
// the job with the test's name (RankFailureListener), instead of the peer waiting for a rank
// that returned from the test early. CTest matches the message.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "support/mpi_world.h"

TEST(RankFailure, AssertOnOneRankEndsTheJob) {
  auto& pg = *strider::testing::world();
  ASSERT_NE(pg.rank(), pg.size() - 1) << "simulated assertion on the last rank";
  strider::Tensor t = strider::ones({8});
  pg.all_reduce(t);  // the last rank never arrives
}
