// The resume rule (sampler.h): positions count global samples, so a run stopped after some
// global batches and resumed at the same or another world size (same global batch size)
// continues with exactly the global batches the uninterrupted run would have had. Ranks are
// simulated in one process: rank r of W is a DataLoader over a DistributedSampler(r, W).
#include <functional>

#include "data/data_test_util.h"

namespace strider::testing {
namespace {

using data::DataLoader;
using data::Position;

constexpr int64_t kGlobalBatch = 12;

// The loaders of one world of `world` ranks.
struct World {
  std::vector<std::unique_ptr<DataLoader>> ranks;
  World(int64_t dataset_size, int64_t world, bool drop_last = false, int64_t workers = 0) {
    auto ds = indexed_images(dataset_size);
    for (int64_t r = 0; r < world; ++r) {
      auto sampler = std::make_shared<data::DistributedSampler>(
          dataset_size, data::DistributedSamplerOptions{.num_replicas = world, .rank = r, .shuffle = true, .seed = 42,
                                                        .drop_last = drop_last});
      ranks.push_back(std::make_unique<DataLoader>(
          ds, data::DataLoaderOptions{.batch_size = kGlobalBatch / world, .num_workers = workers, .sampler = sampler}));
    }
  }
  // One step: every rank's next batch, merged into the global batch's order (rank r's k-th
  // sample is global position k * W + r). Empty at the end of the epoch.
  std::vector<int64_t> step() {
    const auto w = ranks.size();
    std::vector<std::vector<int64_t>> local;
    size_t ended = 0;
    for (auto& r : ranks) {  // every rank steps, as every process of a run would
      auto b = r->next();
      if (!b) ++ended;
      else local.push_back(longs(b->at("index")));
    }
    EXPECT_TRUE(ended == 0 || ended == w) << "ranks disagree on the end of the epoch";
    if (ended) return {};
    std::vector<int64_t> global;
    for (size_t k = 0; k < local[0].size(); ++k)
      for (size_t r = 0; r < w; ++r)
        if (k < local[r].size()) global.push_back(local[r][k]);
    return global;
  }
  // Steps until `epochs` epochs ended (an empty step ends one).
  std::vector<std::vector<int64_t>> run(int64_t epochs) {
    std::vector<std::vector<int64_t>> out;
    while (epochs > 0) {
      auto g = step();
      if (g.empty()) --epochs;
      else out.push_back(std::move(g));
    }
    return out;
  }
  Position state() const {
    for (const auto& r : ranks) EXPECT_EQ(r->state(), ranks[0]->state());  // the same on every rank
    return ranks[0]->state();
  }
  void load(Position p) {
    for (auto& r : ranks) r->load_state(p);
  }
};

// Runs `steps` global batches at world size `before`, saves, resumes at `after` and returns
// all global batches of the first two epochs.
std::vector<std::vector<int64_t>> interrupted(int64_t size, int64_t before, int64_t after, int64_t steps,
                                              bool drop_last = false) {
  World first(size, before, drop_last);
  std::vector<std::vector<int64_t>> seen;
  int64_t epochs_left = 2;
  for (int64_t s = 0; s < steps; ++s) {
    auto g = first.step();
    if (g.empty()) --epochs_left;
    else seen.push_back(std::move(g));
  }
  const Position saved = first.state();
  World resumed(size, after, drop_last, /*workers=*/after % 2 + 1);
  resumed.load(saved);
  for (auto& g : resumed.run(epochs_left)) seen.push_back(std::move(g));
  return seen;
}

TEST(ResumeTest, SameWorldSizeContinuesExactly) {
  const auto uninterrupted = World(48, 2).run(2);
  ASSERT_EQ(uninterrupted.size(), 8u);
  for (int64_t steps : {0, 1, 3, 4, 5, 7}) EXPECT_EQ(interrupted(48, 2, 2, steps), uninterrupted) << steps << " steps";
}

TEST(ResumeTest, AnotherWorldSizeContinuesExactly) {
  // 48 samples: a multiple of every world size here, so even the padding agrees.
  const auto uninterrupted = World(48, 2).run(2);
  for (auto [before, after] : {std::pair<int64_t, int64_t>{2, 3}, {2, 4}, {4, 1}, {3, 6}, {6, 2}})
    for (int64_t steps : {1, 2, 5, 6})
      EXPECT_EQ(interrupted(48, before, after, steps), uninterrupted)
          << before << " -> " << after << " ranks after " << steps << " steps";
}

TEST(ResumeTest, TheGlobalBatchIsAPieceOfTheGlobalOrder) {
  World w(48, 3);
  data::DistributedSampler s(48, {.num_replicas = 3, .rank = 0, .seed = 42});
  const auto order = s.global_order();
  const auto batches = w.run(1);
  for (size_t g = 0; g < batches.size(); ++g)
    EXPECT_EQ(batches[g], std::vector<int64_t>(order.begin() + static_cast<long>(g * kGlobalBatch),
                                               order.begin() + static_cast<long>((g + 1) * kGlobalBatch)));
}

TEST(ResumeTest, AnUnevenTailOnlyChangesThePadding) {
  // 50 samples: padded to 50 at 2 ranks, to 52 at 4. Every real sample continues in order;
  // the last global batch is completed for the world size that reaches it.
  const auto uninterrupted = World(50, 2).run(1);
  const auto resumed = interrupted(50, 2, 4, 2);
  ASSERT_GE(resumed.size(), uninterrupted.size());  // epoch 1's batches follow; compare epoch 0
  for (size_t g = 0; g + 1 < uninterrupted.size(); ++g) EXPECT_EQ(resumed[g], uninterrupted[g]);
  const auto& last = uninterrupted.back();  // 2 real samples
  EXPECT_EQ(std::vector<int64_t>(resumed[uninterrupted.size() - 1].begin(), resumed[uninterrupted.size() - 1].begin() + 2), last);
}

TEST(ResumeTest, DropLastAtAnotherWorldSize) {
  const auto uninterrupted = World(48, 4, /*drop_last=*/true).run(2);
  EXPECT_EQ(interrupted(48, 4, 2, 3, true), uninterrupted);
}

TEST(ResumeTest, APositionBetweenGlobalBatchesIsRefused) {
  World w(48, 4);
  EXPECT_THROW(
      {
        w.load({0, 6});
        (void)w.step();
      },
      Error);
}


// Every sampler resumes: a new loader given the saved position continues the same batches.
TEST(ResumeTest, EverySamplerResumesInASingleProcess) {
  auto ds = indexed_images(30);
  std::vector<std::function<std::shared_ptr<data::Sampler>()>> samplers = {
      [] { return std::make_shared<data::SequentialSampler>(30); },
      [] { return std::make_shared<data::RandomSampler>(30, data::RandomSamplerOptions{.seed = 5}); },
      [] { return std::make_shared<data::RandomSampler>(30, data::RandomSamplerOptions{.replacement = true, .num_samples = 20, .seed = 5}); },
      [] { return std::make_shared<data::WeightedRandomSampler>(std::vector<double>(30, 1.0), 25, true, 5); },
      [] { return std::make_shared<data::WeightedRandomSampler>(std::vector<double>(30, 2.0), 17, false, 5); },
  };
  for (size_t k = 0; k < samplers.size(); ++k) {
    auto flat = [&](DataLoader& l, int64_t batches) {
      std::vector<int64_t> out;
      for (int64_t i = 0; i < batches; ++i)
        if (auto b = l.next())
          for (int64_t v : longs(b->at("index"))) out.push_back(v);
      return out;
    };
    DataLoader whole(ds, {.batch_size = 4, .drop_last = true, .sampler = samplers[k]()});
    const auto expected = flat(whole, 40);  // runs over several epochs (nullopt at each end)
    for (int64_t stop : {1, 3, 7, 12}) {
      DataLoader first(ds, {.batch_size = 4, .drop_last = true, .num_workers = 1, .sampler = samplers[k]()});
      auto got = flat(first, stop);
      DataLoader second(ds, {.batch_size = 4, .drop_last = true, .num_workers = 2, .sampler = samplers[k]()});
      second.load_state(first.state());
      for (int64_t v : flat(second, 40 - stop)) got.push_back(v);
      EXPECT_EQ(got, expected) << "sampler " << k << " stopped after " << stop << " calls";
    }
  }
}

}  // namespace
}  // namespace strider::testing
