// Samplers: orders, seeds, epochs, and the resume rule of sampler.h.
#include <algorithm>
#include <set>

#include "data/data_test_util.h"

namespace strider::testing {
namespace {

using data::DistributedSampler;

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

TEST(SamplerTest, SequentialIsTheIdentity) {
  data::SequentialSampler s(5);
  EXPECT_EQ(s.indices(), iota(5));
  EXPECT_EQ(s.remaining(2), (std::vector<int64_t>{2, 3, 4}));
}

TEST(SamplerTest, RandomIsASeededPermutationPerEpoch) {
  data::RandomSampler a(50, {.seed = 7}), b(50, {.seed = 7}), other(50, {.seed = 8});
  EXPECT_EQ(sorted(a.indices()), iota(50));
  EXPECT_EQ(a.indices(), b.indices());
  EXPECT_NE(a.indices(), other.indices());
  EXPECT_NE(a.indices(), iota(50));
  const auto epoch0 = a.indices();
  a.set_epoch(1);
  EXPECT_NE(a.indices(), epoch0);
  EXPECT_EQ(sorted(a.indices()), iota(50));
}

TEST(SamplerTest, RandomNumSamplesAndReplacement) {
  data::RandomSampler longer(10, {.num_samples = 25, .seed = 1});
  const auto idx = longer.indices();
  ASSERT_EQ(idx.size(), 25u);
  EXPECT_EQ(sorted({idx.begin(), idx.begin() + 10}), iota(10));  // whole permutations first
  EXPECT_EQ(sorted({idx.begin() + 10, idx.begin() + 20}), iota(10));
  data::RandomSampler with(4, {.replacement = true, .num_samples = 400, .seed = 2});
  const auto draws = with.indices();
  ASSERT_EQ(draws.size(), 400u);
  std::vector<int> count(4);
  for (int64_t i : draws) ++count.at(static_cast<size_t>(i));
  for (int c : count) EXPECT_GT(c, 50);  // every index drawn (loose, deterministic for this seed)
}

TEST(SamplerTest, WeightedNeverDrawsZeroWeights) {
  data::WeightedRandomSampler with({0.0, 1.0, 3.0, 0.0}, 200, true, 5);
  const auto draws = with.indices();
  ASSERT_EQ(draws.size(), 200u);
  int ones = 0, threes = 0;
  for (int64_t i : draws) {
    EXPECT_TRUE(i == 1 || i == 2) << i;
    (i == 1 ? ones : threes)++;
  }
  EXPECT_GT(threes, ones);
  data::WeightedRandomSampler without({1.0, 0.0, 2.0, 5.0}, 3, false, 5);
  EXPECT_EQ(sorted(without.indices()), (std::vector<int64_t>{0, 2, 3}));
  EXPECT_THROW(data::WeightedRandomSampler({1.0, 0.0}, 2, false), Error);
  EXPECT_THROW(data::WeightedRandomSampler({1.0, -1.0}, 2), Error);
}

TEST(SamplerTest, BatchSamplerChunksAndDropsLast) {
  auto seq = std::make_shared<data::SequentialSampler>(7);
  EXPECT_EQ(data::BatchSampler(seq, 3).batches(),
            (std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}, {6}}));
  EXPECT_EQ(data::BatchSampler(seq, 3, true).batches(), (std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(data::BatchSampler(seq, 3).batches(3), (std::vector<std::vector<int64_t>>{{3, 4, 5}, {6}}));
}

TEST(SamplerTest, DistributedShuffleIsSeededBySeedPlusEpochAndSharedByRanks) {
  DistributedSampler r0(20, {.num_replicas = 2, .rank = 0, .seed = 3});
  DistributedSampler r1(20, {.num_replicas = 2, .rank = 1, .seed = 3});
  std::vector<int64_t> both = r0.indices();
  const auto one = r1.indices();
  both.insert(both.end(), one.begin(), one.end());
  EXPECT_EQ(sorted(both), iota(20));  // a partition
  const auto epoch0 = r0.global_order();
  r0.set_epoch(1);
  EXPECT_NE(r0.global_order(), epoch0);
  DistributedSampler seed4(20, {.num_replicas = 2, .rank = 0, .seed = 4});
  EXPECT_EQ(seed4.global_order(), r0.global_order());  // seed 4 epoch 0 == seed 3 epoch 1, as PyTorch
  // The global order does not depend on the world size.
  DistributedSampler w5(20, {.num_replicas = 5, .rank = 0, .seed = 3});
  w5.set_epoch(1);
  EXPECT_EQ(w5.global_order(), r0.global_order());
}

TEST(SamplerTest, RemainingRejectsAPositionBetweenReplicas) {
  DistributedSampler s(12, {.num_replicas = 4, .rank = 1});
  EXPECT_EQ(s.remaining(8).size(), 1u);
  try {
    (void)s.remaining(6);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a multiple of the 4 replicas"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)s.remaining(13), Error);
}

TEST(SamplerTest, BadDistributedArgumentsAreNamed) {
  try {
    DistributedSampler s(10, {.num_replicas = 2, .rank = 2});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 2 is outside [0, 1]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(DistributedSampler(3, {.num_replicas = 4, .drop_last = true}), Error);
}

}  // namespace
}  // namespace strider::testing
