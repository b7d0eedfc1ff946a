// DataLoader over an IterableDataset: a stream opened at any sample, shared out by batch to the
// workers, split by rank, resumable.
#include <atomic>
#include <set>

#include "data/data_test_util.h"

namespace strider::testing {
namespace {

using data::Batch;
using data::DataLoader;
using data::DataLoaderOptions;

// Samples 0..n-1 ("x": the sample number plus 1000 * epoch); seeks in O(1).
class Counting : public data::IterableDataset {
 public:
  explicit Counting(int64_t n) : n_(n) {}
  std::unique_ptr<data::SampleStream> open(int64_t first, const data::WorkerInfo& w) const override {
    ++opened;
    return std::make_unique<Stream>(first, n_, w.epoch);
  }
  mutable std::atomic<int> opened{0};

 private:
  struct Stream : data::SampleStream {
    Stream(int64_t at, int64_t n, int64_t epoch) : at(at), n(n), epoch(epoch) {}
    std::optional<data::Sample> next() override {
      if (at >= n) return std::nullopt;
      return data::Sample{{"x", scalar_tensor(at++ + 1000 * epoch)}};
    }
    void skip(int64_t count) override { at = std::min(n, at + count); }
    int64_t at, n, epoch;
  };
  int64_t n_;
};

std::vector<int64_t> flatten(DataLoader& loader) {
  std::vector<int64_t> out;
  while (auto b = loader.next())
    for (int64_t v : longs(b->at("x"))) out.push_back(v);
  return out;
}

std::vector<int64_t> range(int64_t a, int64_t b) {
  std::vector<int64_t> v;
  for (int64_t i = a; i < b; ++i) v.push_back(i);
  return v;
}

TEST(IterableLoaderTest, WorkersShareTheStreamByBatchInOrder) {
  within_deadline([] {
    for (int64_t workers : {0, 1, 3}) {
      auto ds = std::make_shared<Counting>(23);
      DataLoader loader(ds, DataLoaderOptions{.batch_size = 4, .num_workers = workers});
      EXPECT_EQ(flatten(loader), range(0, 23)) << workers << " workers";
      EXPECT_EQ(ds->opened.load(), std::max<int>(1, static_cast<int>(workers)));  // one stream per worker
      EXPECT_EQ(flatten(loader), range(1000, 1023));  // the next epoch
    }
  });
}

TEST(IterableLoaderTest, DropLastAndResume) {
  auto ds = std::make_shared<Counting>(23);
  DataLoader drop(ds, DataLoaderOptions{.batch_size = 4, .drop_last = true, .num_workers = 2});
  EXPECT_EQ(flatten(drop), range(0, 20));
  DataLoader loader(ds, DataLoaderOptions{.batch_size = 4, .num_workers = 2});
  (void)loader.next();
  (void)loader.next();
  const data::Position saved = loader.state();
  EXPECT_EQ(saved, (data::Position{0, 8}));
  DataLoader resumed(ds, DataLoaderOptions{.batch_size = 4, .num_workers = 3});
  resumed.load_state(saved);
  EXPECT_EQ(flatten(resumed), range(8, 23));
}

TEST(IterableLoaderTest, RanksTakeTheirSliceOfEachGlobalBatch) {
  auto ds = std::make_shared<Counting>(24);
  DataLoader r0(ds, DataLoaderOptions{.batch_size = 2, .num_replicas = 2, .rank = 0});
  DataLoader r1(ds, DataLoaderOptions{.batch_size = 2, .num_workers = 2, .num_replicas = 2, .rank = 1});
  EXPECT_EQ(longs(r0.next()->at("x")), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(longs(r1.next()->at("x")), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r0.state(), (data::Position{0, 4}));
  // Resume both ranks' position on one rank with the whole global batch.
  DataLoader alone(ds, DataLoaderOptions{.batch_size = 4});
  alone.load_state(r0.state());
  EXPECT_EQ(flatten(alone), range(4, 24));
}

// A rank that took one batch more than another would leave the other ranks' collectives
// waiting: the incomplete last global batch is dropped or padded alike on every rank.
TEST(IterableLoaderTest, EveryRankTakesTheSameNumberOfBatches) {
  auto ds = std::make_shared<Counting>(11);
  auto batches = [&](int64_t rank, bool drop_last, int64_t workers) {
    DataLoader loader(ds, DataLoaderOptions{.batch_size = 3, .drop_last = drop_last, .num_workers = workers,
                                            .num_replicas = 2, .rank = rank});
    std::vector<std::vector<int64_t>> out;
    while (auto b = loader.next()) out.push_back(longs(b->at("x")));
    return out;
  };
  using Batches = std::vector<std::vector<int64_t>>;
  for (int64_t workers : {0, 2}) {
    // The last global batch holds 6..10: repeated from its start to 6 samples, split in two.
    EXPECT_EQ(batches(0, false, workers), (Batches{{0, 1, 2}, {6, 7, 8}}));
    EXPECT_EQ(batches(1, false, workers), (Batches{{3, 4, 5}, {9, 10, 6}}));
    EXPECT_EQ(batches(0, true, workers), (Batches{{0, 1, 2}}));
    EXPECT_EQ(batches(1, true, workers), (Batches{{3, 4, 5}}));
  }
  for (int64_t n = 0; n <= 14; ++n) {
    for (int64_t world : {2, 3, 4}) {
      for (bool drop_last : {false, true}) {
        auto stream = std::make_shared<Counting>(n);
        std::vector<size_t> steps, last_sizes;
        std::set<int64_t> seen;
        for (int64_t rank = 0; rank < world; ++rank) {
          DataLoader loader(stream, DataLoaderOptions{.batch_size = 2, .drop_last = drop_last, .num_replicas = world,
                                                      .rank = rank});
          size_t count = 0, last = 0;
          while (auto b = loader.next()) {
            ++count;
            last = longs(b->at("x")).size();
            for (int64_t v : longs(b->at("x"))) seen.insert(v);
          }
          steps.push_back(count);
          last_sizes.push_back(last);
        }
        const std::string where = "n " + std::to_string(n) + " world " + std::to_string(world) +
                                  (drop_last ? " drop_last" : "");
        for (int64_t rank = 1; rank < world; ++rank) {
          EXPECT_EQ(steps[rank], steps[0]) << where;
          EXPECT_EQ(last_sizes[rank], last_sizes[0]) << where;
        }
        const int64_t whole = n / (2 * world) * 2 * world;
        EXPECT_EQ(static_cast<int64_t>(seen.size()), drop_last ? whole : n) << where;
      }
    }
  }
}

TEST(IterableLoaderTest, AStreamErrorNamesTheSample) {
  struct Broken : data::IterableDataset {
    std::unique_ptr<data::SampleStream> open(int64_t first, const data::WorkerInfo&) const override {
      struct S : data::SampleStream {
        int64_t at;
        explicit S(int64_t a) : at(a) {}
        std::optional<data::Sample> next() override {
          if (at == 6) throw Error("[reader] record 6 is truncated");
          return data::Sample{{"x", scalar_tensor(at++)}};
        }
      };
      return std::make_unique<S>(first);
    }
  };
  within_deadline([] {
    DataLoader loader(std::make_shared<Broken>(), DataLoaderOptions{.batch_size = 4, .num_workers = 2});
    (void)loader.next();
    try {
      (void)loader.next();
      FAIL();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("batch 1 of epoch 0: reading of sample 6 failed: [reader] record 6 is truncated"),
                std::string::npos) << e.what();
    }
  });
}

}  // namespace
}  // namespace strider::testing
