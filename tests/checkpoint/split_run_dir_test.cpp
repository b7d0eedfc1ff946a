// Ranks whose run directory is not one shared directory (a relative --out on node-local disks)
// each write their file into their own pending directory. The save must fail on every rank,
// naming the rank whose file the committing rank cannot see and the fix, and leave the previous
// checkpoint the latest (and loadable); before, rank 0 committed a manifest listing a file that
// was not there and pruned the good checkpoints.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <filesystem>

#include "support/mpi_world.h"

namespace strider {
namespace {

namespace fs = std::filesystem;

TEST(SplitRunDirectory, ASaveRanksCannotShareFailsEveryRankAndKeepsThePreviousCheckpoint) {
  auto& pg = testing::world();
  const int W = pg->size(), rank = pg->rank();
  if (W < 2) GTEST_SKIP() << "needs 2 ranks";
  const std::string mine = (fs::temp_directory_path() / ("strider_split_run_" + std::to_string(::getpid()))).string();
  const std::string base = dist::all_gather_strings(*pg, "test path", mine)[0];
  const std::string shared = base + "/shared";
  // Rank r > 0 saves through base/rank<r>: first a link to the shared directory, then a directory
  // of its own (as if its --out were on its own disk).
  const std::string own = rank == 0 ? shared : base + "/rank" + std::to_string(rank);
  if (rank == 0) fs::create_directories(shared);
  pg->barrier();
  if (rank > 0) fs::create_directory_symlink(shared, own);
  pg->barrier();

  manual_seed(3);
  auto model = fsdp::FullyShardedDataParallel::wrap(std::make_shared<nn::Linear>(8, 6), pg, {});
  optim::SGD opt(model->named_parameters(), {.lr = 0.1});
  checkpoint::Checkpointer ckpt(own, pg, {.keep_last = 1});
  ckpt.save(1, {.model = model.get(), .optimizer = &opt});

  pg->barrier();
  if (rank > 0) {
    fs::remove(own);
    fs::create_directories(own);
  }
  pg->barrier();
  std::string error;
  try {
    ckpt.save(2, {.model = model.get(), .optimizer = &opt});
  } catch (const Error& e) {
    error = e.what();
  }
  // Every rank fails, with the same message naming rank 1's file and the fix.
  EXPECT_NE(error.find("rank 1's file"), std::string::npos) << error;
  EXPECT_NE(error.find("not one shared directory"), std::string::npos) << error;
  EXPECT_NE(error.find("the latest checkpoint is still the previous one"), std::string::npos) << error;
  if (rank == 0) {
    const auto committed = checkpoint::committed_checkpoints(shared);
    ASSERT_EQ(committed.size(), 1u);
    EXPECT_EQ(committed.back().step, 1);
    EXPECT_NO_THROW(checkpoint::verify_checkpoint(shared));
  }
  pg->barrier();
  std::error_code ec;
  if (rank == 0) fs::remove_all(base, ec);
}

}  // namespace
}  // namespace strider
