// make_parallel wraps the model over the group it is given, so the wrapped model's collectives
// keep --collective-timeout (it once made a second group with the default 600 s).
#include <gtest/gtest.h>

#include <chrono>

#include <strider/strider.h>

#include "parallel.h"

namespace strider::tools {
namespace {

std::shared_ptr<dist::ProcessGroup> group_with_timeout(std::chrono::milliseconds timeout) {
  auto pg = std::make_shared<dist::SingleProcessGroup>();
  pg->set_timeout(timeout);
  return pg;
}

TEST(TrainParallelTest, WrappedModelUsesTheGivenGroup) {
  const std::chrono::milliseconds timeout(2500);
  for (const char* strategy : {"full_shard", "ddp", "shard_optimizer"}) {
    TrainOptions o;
    o.fsdp = strategy;
    o.batch_size = 4;
    o.fsdp_min_params = 100;
    auto pg = group_with_timeout(timeout);
    const Parallel par = make_parallel(models::small_cnn(10, 1), o, pg);
    ASSERT_NE(par.engine, nullptr) << strategy;
    EXPECT_EQ(&par.engine->process_group(), pg.get()) << strategy;
    EXPECT_EQ(par.engine->process_group().timeout(), timeout) << strategy;
    EXPECT_EQ(pg->timeout(), timeout) << strategy;
  }
}

TEST(TrainParallelTest, PlainModelNeedsNoGroup) {
  TrainOptions o;
  const Parallel par = make_parallel(models::small_cnn(10, 1), o, nullptr);
  EXPECT_EQ(par.pg, nullptr);
  EXPECT_EQ(par.engine, nullptr);
  EXPECT_EQ(par.world, 1);
}

}  // namespace
}  // namespace strider::tools
