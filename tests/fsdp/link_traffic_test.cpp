// fsdp::bytes_leaving_host_per_step on made-up layouts: which ring edges leave a host for each
// kind of group, and that the bytes on them are what one rank sends in that group
// (bytes_sent_per_step's terms). The emulated-hosts test compares it with the bytes counted on
// the link (tests/tools/emulated_hosts.sh).
#include <gtest/gtest.h>
#include <strider/fsdp/cost_model.h>

#include <vector>

#include "strider/core/error.h"

namespace strider::fsdp {
namespace {

// One unit of 1200 float32 elements (divisible by 1 to 6 ranks: no padding).
UnitLayout unit(int shard_ranks, int replicas, bool flat, bool free_after_forward) {
  UnitLayout u;
  u.name = "u";
  u.flat_shards = flat;
  u.free_after_forward = free_after_forward;
  u.layout = FlatLayout({{1200}}, flat ? shard_ranks : 1);
  u.replicas = replicas;
  return u;
}

constexpr int64_t kBytes = 1200 * 4;
// With each reduction, the all-reduce over the world of which parameters a backward reached: a
// float32 per parameter (one here), on the world's ring of consecutive ranks.
int64_t mask(int world) { return 2 * 4 * (world - 1) / world; }

TEST(LinkTraffic, FullShardCrossesOnceFromEachHost) {
  // 4 ranks, 2 per host: the ring 0-1-2-3 leaves each host once. Gathered twice (forward and
  // again for backward), reduce-scattered once: 3 x 3/4 of the buffer per rank.
  const std::vector<UnitLayout> units = {unit(4, 1, true, true)};
  EXPECT_EQ(bytes_sent_per_step(units), 3 * kBytes * 3 / 4 + mask(4));
  for (int host : {0, 1}) EXPECT_EQ(bytes_leaving_host_per_step(units, 2, host), 3 * kBytes * 3 / 4 + mask(4));
  // One host: nothing leaves it.
  EXPECT_EQ(bytes_leaving_host_per_step(units, 4, 0), 0);
}

TEST(LinkTraffic, HybridShardSendsOnlyTheReplicaAllReduceAcrossHosts) {
  // Shard groups are the hosts; each replica group has one rank per host, so both ranks of a
  // host send their all-reduce across: 2 ranks x 2 x (1/2) x their shard of 600 elements (and
  // the world's ring leaves each host once with the mask).
  const std::vector<UnitLayout> units = {unit(2, 2, true, true)};
  EXPECT_EQ(bytes_leaving_host_per_step(units, 2, 0), 2 * (2 * (kBytes / 2) * 1 / 2) + mask(4));
}

TEST(LinkTraffic, DdpRingOverFourRanks) {
  const std::vector<UnitLayout> units = {unit(1, 4, false, false)};
  EXPECT_EQ(bytes_sent_per_step(units), 2 * kBytes * 3 / 4 + mask(4));
  EXPECT_EQ(bytes_leaving_host_per_step(units, 2, 1), 2 * kBytes * 3 / 4 + mask(4));
  // 1 rank per host: every edge of the ring leaves its host.
  EXPECT_EQ(bytes_leaving_host_per_step(units, 1, 3), 2 * kBytes * 3 / 4 + mask(4));
}

TEST(LinkTraffic, HostsMaySendDifferentAmounts) {
  // Shard groups of 3 over hosts of 2: host 0 holds ranks 0 and 1 of group 0 (one edge leaves:
  // 1 -> 2), host 1 holds rank 2 of group 0 (2 -> 0 leaves) and rank 0 of group 1 (3 -> 4 leaves).
  const std::vector<UnitLayout> units = {unit(3, 2, true, false)};
  const int64_t shard = bytes_leaving_host_per_step(units, 2, 0);
  EXPECT_GT(shard, 0);
  EXPECT_GT(bytes_leaving_host_per_step(units, 2, 1), shard);
}

TEST(LinkTraffic, SplitByPhaseWithTheUnhiddenShare) {
  UnitLayout root = unit(4, 1, true, true), block = unit(4, 1, true, true);
  root.is_root = true;
  root.layout = FlatLayout({{2400}}, 4);
  const int64_t gather = kBytes * 3 / 4, root_gather = 2400 * 4 * 3 / 4;
  // The block gathers in forward and again in backward, then reduce-scatters; the root gathers
  // once and stays gathered: all its traffic is unhidden, none of the block's.
  const LinkTraffic t = link_traffic_per_step({block, root}, 2, 0);
  EXPECT_EQ(t.forward, gather + root_gather);
  EXPECT_EQ(t.backward, 2 * gather + root_gather + 2 * mask(4));
  EXPECT_EQ(t.unhidden_forward, root_gather);
  EXPECT_EQ(t.unhidden_backward, root_gather + mask(4));
  EXPECT_EQ(t.total(), bytes_leaving_host_per_step({block, root}, 2, 0));
  // Without a root (DDP's buckets) the first unit's, with one gather instead of its two.
  const LinkTraffic b = link_traffic_per_step({block}, 2, 0);
  EXPECT_EQ(b.unhidden_forward + b.unhidden_backward, 2 * gather + mask(4));
  // DDP and hybrid sharding send across hosts only in backward.
  EXPECT_EQ(link_traffic_per_step({unit(1, 4, false, false)}, 2, 0).forward, 0);
  EXPECT_EQ(link_traffic_per_step({unit(2, 2, true, true)}, 2, 0).forward, 0);
  EXPECT_EQ(link_traffic_per_step({block}, 4, 0).total(), 0);
}

// Unit by unit, collective by collective, the bytes add up to the per-step figures: the gathers
// are forward's, the rest backward's.
TEST(LinkTraffic, PerUnitBytesAddUpToTheStep) {
  std::vector<UnitLayout> units = {unit(4, 1, true, true), unit(2, 2, true, true), unit(1, 4, false, false)};
  units[0].is_root = true;
  units[0].free_after_forward = false;  // the root stays gathered through backward
  for (int host : {0, 1}) {
    int64_t forward = 0, backward = 0;
    for (const UnitLinkBytes& u : link_bytes_per_unit(units, 2, host)) {
      forward += u.gather;
      backward += u.regather + u.reduce + u.replica;
    }
    const LinkTraffic step = link_traffic_per_step(units, 2, host);
    EXPECT_EQ(forward, step.forward);
    EXPECT_EQ(backward, step.backward);
  }
  const auto per_unit = link_bytes_per_unit(units, 2, 0);
  EXPECT_TRUE(per_unit[0].is_root);
  EXPECT_EQ(per_unit[0].regather, 0);
  EXPECT_EQ(per_unit[1].gather, 0);    // hybrid: shard groups are the hosts
  EXPECT_GT(per_unit[1].replica, 0);
  EXPECT_EQ(per_unit[2].elements, 1200);
}

// In-memory snapshots keep each rank's rows of every parameter and its moments (rows split over
// all ranks, replicas included), in two copies with a partner host: the same bytes per rank
// under every strategy on 4 ranks.
TEST(MemoryFormula, SnapshotsHoldEachRanksShareOfParametersAndMoments) {
  for (const UnitLayout& u : {unit(4, 1, true, true), unit(2, 2, true, true), unit(1, 4, false, false)}) {
    EXPECT_EQ(memory_formula({u}, 2, 0, 2).memory_snapshots, 2 * 3 * kBytes / 4);
    EXPECT_EQ(memory_formula({u}, 1, 0, 1).memory_snapshots, 2 * kBytes / 4);
    EXPECT_EQ(memory_formula({u}, 2, 0).memory_snapshots, 0);
  }
}

TEST(LinkTraffic, RefusesWhatItDoesNotModel) {
  std::vector<UnitLayout> units = {unit(4, 1, true, true)};
  EXPECT_THROW(bytes_leaving_host_per_step(units, 3, 0), Error);  // 3 does not divide 4
  EXPECT_THROW(bytes_leaving_host_per_step(units, 2, 2), Error);  // only hosts 0 and 1
  units[0].exact_gradients = true;
  try {
    bytes_leaving_host_per_step(units, 2, 0);
    FAIL() << "deterministic mode's all-to-all is not a ring";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("deterministic"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace strider::fsdp
