// The offload tier moves blocks to its file and back; every access through a storage sees the
// bytes whatever state the block is in, and a block touched during its write-back stays.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <chrono>
#include <thread>

#include "fsdp/offload_tier.h"
#include "support/compare.h"

namespace strider {
namespace {

using fsdp::detail::OffloadTier;

// A float tensor of n elements in the tier, filled with i * scale.
Tensor in_tier(OffloadTier& tier, int64_t n, double scale) {
  auto storage = std::make_shared<StorageImpl>(static_cast<size_t>(n) * 4, tier);
  Tensor t(std::make_shared<TensorImpl>(storage, kFloat, DimVector{n}, DimVector{1}, 0));
  t.copy_(arange(n).to(kFloat) * scale);
  return t;
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
  OffloadTier& tier = *OffloadTier::open("/tmp");
  // One block below the huge-page size and one above it (a tail of 4 KiB pages included).
  for (int64_t n : {int64_t{1000}, int64_t{(3 << 20) / 4 + 17}}) {
    SCOPED_TRACE(n);
    Tensor t = in_tier(tier, n, 0.5);
    Tensor want = arange(n).to(kFloat) * 0.5;
    tier.evict(t);
    ASSERT_TRUE(wait_for(t, PagedBlock::Away));
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
  OffloadTier& tier = *OffloadTier::open("/tmp");
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

TEST(OffloadTier, FreeingABlockInFlightIsSafe) {
  OffloadTier& tier = *OffloadTier::open("/tmp");
  const int64_t before = tier.bytes();
  for (int i = 0; i < 50; ++i) {
    Tensor t = in_tier(tier, 300000, 1.0);
    tier.evict(t);
    if (i % 2) tier.prefetch(t);
  }  // each freed at once, whatever its worker is doing
  EXPECT_EQ(tier.bytes(), before);
}

}  // namespace
}  // namespace strider
