// The offload tier moves blocks to its file and back; every access through a storage sees the
// bytes whatever state the block is in, and a block touched during its write-back stays. Each
// test runs on a tier that releases the pages of blocks written out and on one that keeps them
// as spares for the next reads.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/make_tensor.h"
#include "fsdp/offload_tier.h"
#include "support/compare.h"

namespace strider {
namespace {

using fsdp::detail::OffloadTier;

// A float tensor of n elements in the tier, filled with i * scale.
Tensor in_tier(OffloadTier& tier, int64_t n, double scale) {
  Tensor t = make_tensor({n}, {1}, kFloat, tier);
  t.copy_(arange(n).to(kFloat) * scale);
  return t;
}

// A tier of its own (FSDP tests in this process may have raised /tmp's spare limit).
OffloadTier& tier_for(bool spares) {
  auto make = [](int64_t spare_limit) {
    std::string dir = "/tmp/strider-tier-test-XXXXXX";
    if (!mkdtemp(dir.data())) std::abort();
    OffloadTier* t = OffloadTier::open(dir);
    rmdir(dir.c_str());  // the tier's file is already unlinked; its descriptor keeps it
    t->keep_spare_pages(spare_limit);
    return t;
  };
  static OffloadTier* with = make(int64_t{1} << 30);
  static OffloadTier* without = make(0);
  return spares ? *with : *without;
}

bool wait_for(const Tensor& t, int state) {
  const PagedBlock* b = t.storage()->allocator()->paged_block(t.storage()->address());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (b->state.load() != state) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(OffloadTier, BlocksComeBackWithTheirBytes) {
  for (bool spares : {false, true})
  // One block below the huge-page size and one above it (a tail of 4 KiB pages included).
  for (int64_t n : {int64_t{1000}, int64_t{(3 << 20) / 4 + 17}}) {
    SCOPED_TRACE(::testing::Message() << n << (spares ? " elements, spare pages" : " elements"));
    OffloadTier& tier = tier_for(spares);
    Tensor t = in_tier(tier, n, 0.5);
    Tensor want = arange(n).to(kFloat) * 0.5;
    tier.evict(t);
    ASSERT_TRUE(wait_for(t, PagedBlock::Away));
    if (spares) EXPECT_GE(tier.spare_bytes(), n * 4) << "the written block's pages were not kept";
    // Another block's use of the spare pages must not show through.
    if (spares) {
      Tensor other = in_tier(tier, n, -1.0);
      tier.evict(other);
      ASSERT_TRUE(wait_for(other, PagedBlock::Away));
      EXPECT_TRUE(testing::all_close(other, arange(n).to(kFloat) * -1.0, 0, 0));
    }
    EXPECT_TRUE(testing::all_close(t, want, 0, 0)) << "read back on access";
    // Written after coming back: the next eviction writes again.
    t.mul_(2.0);
    tier.evict(t);
    ASSERT_TRUE(wait_for(t, PagedBlock::Away));
    tier.prefetch(t);
    ASSERT_TRUE(wait_for(t, PagedBlock::Resident));
    EXPECT_TRUE(testing::all_close(t, want * 2.0, 0, 0)) << "read back ahead of use";
    // Clean since its last write: evicted without writing, still the same bytes.
    tier.evict(t);
    ASSERT_TRUE(wait_for(t, PagedBlock::Away));
    EXPECT_TRUE(testing::all_close(t, want * 2.0, 0, 0));
  }
}

TEST(OffloadTier, AccessesRacingEvictionsAlwaysSeeTheLatestBytes) {
  for (bool spares : {false, true}) {
  SCOPED_TRACE(spares ? "spare pages" : "pages released");
  OffloadTier& tier = tier_for(spares);
  Tensor t = in_tier(tier, 1 << 20, 1.0);
  for (int round = 0; round < 200; ++round) {
    tier.evict(t);
    if (round % 3 == 0) tier.prefetch(t);
    t.add_(ones_like(t));  // through data(): brings the block back (or keeps it) before writing
    ASSERT_EQ(t[12345].item<double>(), 12345.0 + round + 1) << "round " << round;
  }
  tier.evict(t);
  ASSERT_TRUE(wait_for(t, PagedBlock::Away));
  EXPECT_EQ(t[(1 << 20) - 1].item<double>(), (1 << 20) - 1 + 200.0);
  }
}

TEST(OffloadTier, FreeingABlockInFlightIsSafe) {
  for (bool spares : {false, true}) {
    OffloadTier& tier = tier_for(spares);
    const int64_t before = tier.bytes();
    for (int i = 0; i < 50; ++i) {
      Tensor t = in_tier(tier, 300000, 1.0);
      tier.evict(t);
      if (i % 2) tier.prefetch(t);
    }  // each freed at once, whatever its worker is doing
    EXPECT_EQ(tier.bytes(), before);
  }
}

// wait_for_writes returns once every queued eviction is written out (what lets FSDP build a
// model larger than RAM unit by unit), also when a queued block is freed instead, and at once
// when nothing is queued.
TEST(OffloadTier, WaitForWritesReturnsWhenTheQueueIsWritten) {
  for (bool spares : {false, true}) {
    OffloadTier& tier = tier_for(spares);
    tier.wait_for_writes();
    std::vector<Tensor> blocks;
    for (int i = 0; i < 8; ++i) blocks.push_back(in_tier(tier, 200000, i + 1.0));
    for (const Tensor& t : blocks) tier.evict(t);
    Tensor freed = in_tier(tier, 200000, 9.0);
    tier.evict(freed);
    freed = Tensor();
    tier.wait_for_writes();
    for (const Tensor& t : blocks) {
      const PagedBlock* b = t.storage()->allocator()->paged_block(t.storage()->address());
      EXPECT_EQ(b->state.load(), PagedBlock::Away);
    }
    EXPECT_EQ(blocks[3][199999].item<double>(), 199999 * 4.0);  // and read back with its bytes
  }
}

// held_bytes: the blocks' pages while in memory and the spare pages. A block written out leaves
// its bytes held as spares (or gives them back); read back, they are the block's again; freed,
// they go. The peak covers everything since reset_peak_held().
TEST(OffloadTier, CountsTheMemoryItHolds) {
  for (bool spares : {false, true}) {
    SCOPED_TRACE(spares ? "spare pages" : "no spares");
    OffloadTier& tier = tier_for(spares);
    tier.wait_for_writes();
    const int64_t base = tier.held_bytes(), spare_base = tier.spare_bytes();
    tier.reset_peak_held();
    const int64_t n = (3 << 20) / 4;
    Tensor t = in_tier(tier, n, 1.0);
    const int64_t bytes = tier.block_bytes(t.storage()->address());
    EXPECT_EQ(bytes, n * 4);
    EXPECT_EQ(tier.held_bytes(), base + bytes);
    tier.evict(t);
    tier.wait_for_writes();
    ASSERT_TRUE(wait_for(t, PagedBlock::Away));
    EXPECT_EQ(tier.held_bytes(), base + (tier.spare_bytes() - spare_base));
    EXPECT_EQ(tier.spare_bytes() - spare_base, spares ? bytes : 0);
    EXPECT_EQ(t[n - 1].item<double>(), n - 1.0);  // read back: the block's again
    EXPECT_EQ(tier.held_bytes(), base + bytes);
    t = Tensor();
    EXPECT_EQ(tier.held_bytes(), base);
    EXPECT_EQ(tier.peak_held_bytes(), base + bytes);
  }
}

// A tier with this bound on its writes behind, in a directory of its own (the largest bound
// asked for a tier wins).
OffloadTier& tier_writing_behind(int64_t bytes) {
  std::string dir = "/tmp/strider-tier-test-XXXXXX";
  if (!mkdtemp(dir.data())) std::abort();
  OffloadTier* t = OffloadTier::open(dir);
  rmdir(dir.c_str());
  t->limit_write_behind(bytes);
  return *t;
}

TEST(OffloadTier, EvictionsWaitWhileMoreThanTheBoundIsLeftToWrite) {
  const int64_t n = (3 << 20) / 4;  // 3 MiB blocks
  for (int64_t blocks_behind : {0, 2}) {
    SCOPED_TRACE(::testing::Message() << "bound: " << blocks_behind << " blocks");
    OffloadTier& tier = tier_writing_behind(blocks_behind * n * 4);
    std::vector<Tensor> ts;
    for (int i = 0; i < 8; ++i) ts.push_back(in_tier(tier, n, i + 1.0));
    tier.reset_peak_held();
    for (const Tensor& t : ts) {
      tier.evict(t);
      EXPECT_LE(tier.write_backlog_bytes(), blocks_behind * n * 4);  // what returned is within the bound
      // Bound 0: each eviction came back once its block was written and released.
      if (blocks_behind == 0) EXPECT_EQ(t.storage()->allocator()->paged_block(t.storage()->address())->state.load(),
                                        PagedBlock::Away);
    }
    // The block being queued counts before its eviction waits: one block over at most.
    EXPECT_LE(tier.peak_write_backlog_bytes(), (blocks_behind + 1) * n * 4);
    EXPECT_GT(tier.write_wait_seconds(), 0.0);
    tier.wait_for_writes();
    EXPECT_EQ(tier.write_backlog_bytes(), 0);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(ts[i][n - 1].item<double>(), (n - 1.0) * (i + 1.0));
  }
}

// Every way a block leaves the writer's queue gives its bytes back: read back ahead of use,
// freed while queued, evicted again (while queued or being written), all queued at once.
TEST(OffloadTier, TheWriteBacklogIsGivenBackHoweverABlockLeavesTheQueue) {
  const int64_t n = (3 << 20) / 4;
  OffloadTier& tier = tier_writing_behind(int64_t{1} << 30);  // nothing waits: the queue stays long
  std::vector<Tensor> ts;
  for (int i = 0; i < 8; ++i) ts.push_back(in_tier(tier, n, i + 1.0));
  for (int round = 0; round < 3; ++round) {
    for (const Tensor& t : ts) tier.evict(t);
    tier.prefetch(ts[1]);
    tier.evict(ts[2]);  // again, queued or being written
    tier.evict_all();
    tier.prefetch_all();
    for (const Tensor& t : ts) tier.evict(t);
    ts[3] = in_tier(tier, n, 4.0);  // the queued block is freed, a new one takes its place
    tier.evict(ts[3]);
    tier.wait_for_writes();
    EXPECT_EQ(tier.write_backlog_bytes(), 0) << "round " << round;
  }
  for (int i = 0; i < 8; ++i) EXPECT_EQ(ts[i][n - 1].item<double>(), (n - 1.0) * (i + 1.0));
}

}  // namespace
}  // namespace strider
