// DataLoader: batches, workers, errors, early stop, range-for and positions.
#include <atomic>
#include <stdexcept>

#include "data/data_test_util.h"

namespace strider::testing {
namespace {

using data::Batch;
using data::DataLoader;
using data::DataLoaderOptions;

std::vector<Batch> drain(DataLoader& loader) {
  std::vector<Batch> out;
  while (auto b = loader.next()) out.push_back(std::move(*b));
  return out;
}

TEST(TensorDatasetTest, RowsAreSamples) {
  auto ds = indexed_images(4);
  EXPECT_EQ(ds->size(), 4);
  data::Sample s = ds->get(2);
  EXPECT_EQ(s.names(), "image, index");
  EXPECT_EQ(s.at("index").item<int64_t>(), 2);
  EXPECT_EQ(s.at("image").sizes(), IntArrayRef({3, 5, 6}));
}

TEST(TensorDatasetTest, ErrorsNameTheIndexTheSizeAndTheFields) {
  auto ds = indexed_images(4);
  try {
    (void)ds->get(4);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 4 is out of range for a dataset of 4 samples"), std::string::npos)
        << e.what();
  }
  try {
    data::TensorDataset bad{{"x", zeros({3, 2})}, {"y", zeros({4})}};
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x: 3, y: 4"), std::string::npos) << e.what();
  }
  try {
    (void)ds->get(0).at("label");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no field 'label'; the sample has fields [image, index]"), std::string::npos)
        << e.what();
  }
}

TEST(DataLoaderTest, DefaultsArePyTorchs) {
  DataLoaderOptions o;
  EXPECT_EQ(o.batch_size, 1);
  EXPECT_FALSE(o.shuffle);
  EXPECT_FALSE(o.drop_last);
  EXPECT_EQ(o.num_workers, 0);
  EXPECT_EQ(o.prefetch_factor, 2);
  DataLoader loader(indexed_images(3));
  const auto batches = drain(loader);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(longs(batches[1].at("index")), (std::vector<int64_t>{1}));
  EXPECT_EQ(batches[1].at("image").sizes(), IntArrayRef({1, 3, 5, 6}));
}

TEST(DataLoaderTest, CollatesByStackingAndDropsLast) {
  DataLoader keep(indexed_images(7), {.batch_size = 3});
  auto b = drain(keep);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(longs(b[2].at("index")), (std::vector<int64_t>{6}));
  DataLoader drop(indexed_images(7), {.batch_size = 3, .drop_last = true});
  EXPECT_EQ(drain(drop).size(), 2u);
  EXPECT_EQ(drop.batches_per_epoch(), 2);
}

TEST(DataLoaderTest, UserCollate) {
  DataLoaderOptions o;
  o.batch_size = 4;
  o.collate = [](std::vector<data::Sample> samples) {
    Batch b = data::default_collate(std::move(samples));
    b["count"] = scalar_tensor(b.at("index").size(0));
    return b;
  };
  DataLoader loader(indexed_images(6), o);
  auto b = drain(loader);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].at("count").item<int64_t>(), 4);
  EXPECT_EQ(b[1].at("count").item<int64_t>(), 2);
}

DataLoaderOptions augmenting(int64_t workers) {
  DataLoaderOptions o;
  o.batch_size = 4;
  o.shuffle = true;
  o.seed = 11;
  o.num_workers = workers;
  o.prefetch_factor = 1;
  o.transform = data::apply_to("image", data::Compose({data::RandomCrop::square(4, 1), data::RandomHorizontalFlip{0.5},
                                                       data::ToFloat{}, data::Normalize{{0.5}, {0.25}}}));
  return o;
}

TEST(DataLoaderTest, SameBatchesWithZeroOneAndThreeWorkers) {
  within_deadline([] {
    std::vector<std::vector<Batch>> runs;
    for (int64_t workers : {0, 1, 3}) {
      DataLoader loader(indexed_images(37), augmenting(workers));
      std::vector<Batch> both = drain(loader);  // epoch 0
      for (Batch& b : drain(loader)) both.push_back(std::move(b));  // epoch 1
      runs.push_back(std::move(both));
    }
    ASSERT_EQ(runs[0].size(), 20u);
    for (size_t r = 1; r < runs.size(); ++r)
      for (size_t i = 0; i < runs[0].size(); ++i) EXPECT_TRUE(same_batch(runs[0][i], runs[r][i])) << "run " << r << " batch " << i;
    EXPECT_FALSE(same_batch(runs[0][0], runs[0][10]));  // epoch 1 is shuffled and augmented anew
  });
}

TEST(DataLoaderTest, RangeForVisitsOneEpochAndTheNextLoopTheNext) {
  DataLoader loader(indexed_images(10), {.batch_size = 4, .shuffle = true, .seed = 3});
  std::vector<int64_t> epoch0, epoch1;
  for (const Batch& b : loader)
    for (int64_t i : longs(b.at("index"))) epoch0.push_back(i);
  EXPECT_EQ(loader.state(), (data::Position{1, 0}));
  for (const Batch& b : loader)
    for (int64_t i : longs(b.at("index"))) epoch1.push_back(i);
  EXPECT_EQ(epoch0.size(), 10u);
  EXPECT_NE(epoch0, epoch1);
  std::sort(epoch0.begin(), epoch0.end());
  std::sort(epoch1.begin(), epoch1.end());
  EXPECT_EQ(epoch0, epoch1);
}

// Fails reading sample `bad`.
class Failing : public data::Dataset {
 public:
  explicit Failing(int64_t bad) : bad_(bad) {}
  int64_t size() const override { return 12; }
  data::Sample get(int64_t i) const override {
    if (i == bad_) throw std::runtime_error("corrupt record " + std::to_string(i));
    return {{"x", scalar_tensor(i)}};
  }

 private:
  int64_t bad_;
};

TEST(DataLoaderTest, AWorkersExceptionReachesNextWithItsBatchAndSample) {
  within_deadline([] {
    for (int64_t workers : {0, 1, 3}) {
      DataLoader loader(std::make_shared<Failing>(5), {.batch_size = 2, .num_workers = workers});
      EXPECT_TRUE(loader.next());
      EXPECT_TRUE(loader.next());
      try {
        (void)loader.next();
        FAIL() << "expected the dataset's error with " << workers << " workers";
      } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("[DataLoader] batch 2 of epoch 0: reading of sample 5 failed: corrupt record 5"),
                  std::string::npos) << m;
      }
      EXPECT_THROW((void)loader.next(), Error);  // the failed batch stays failed
    }
  });
}

// A slow dataset, so workers are busy (or blocked on a full queue) when the consumer leaves.
class Slow : public data::Dataset {
 public:
  int64_t size() const override { return 400; }
  data::Sample get(int64_t i) const override {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return {{"x", scalar_tensor(i)}};
  }
};

TEST(DataLoaderTest, EarlyStopAndDestructionMidEpochDoNotHang) {
  within_deadline([] {
    for (int64_t workers : {1, 2, 4}) {
      auto loader = std::make_unique<DataLoader>(std::make_shared<Slow>(), DataLoaderOptions{.batch_size = 2, .num_workers = workers});
      int seen = 0;
      for (const Batch& b : *loader) {
        EXPECT_EQ(longs(b.at("x"))[0], 2 * seen);
        if (++seen == 3) break;
      }
      EXPECT_EQ(loader->state(), (data::Position{0, 6}));
      // A new pass continues where the loop stopped; then the loader dies with workers running.
      EXPECT_EQ(longs(loader->next()->at("x")), (std::vector<int64_t>{6, 7}));
      loader.reset();
      DataLoader never_read(std::make_shared<Slow>(), {.batch_size = 2, .num_workers = workers});
      DataLoader started(std::make_shared<Slow>(), {.batch_size = 2, .num_workers = workers});
      (void)started.next();
      started.set_epoch(5);  // stops the running pass
      EXPECT_EQ(longs(started.next()->at("x")), (std::vector<int64_t>{0, 1}));
    }
  });
}

TEST(DataLoaderTest, ContradictoryOptionsAreNamed) {
  auto ds = indexed_images(4);
  auto seq = std::make_shared<data::SequentialSampler>(4);
  EXPECT_THROW(DataLoader(ds, {.shuffle = true, .sampler = seq}), Error);
  EXPECT_THROW(DataLoader(ds, {.batch_size = 2, .batch_sampler = std::make_shared<data::BatchSampler>(seq, 2)}), Error);
  EXPECT_THROW(DataLoader(ds, {.batch_size = 0}), Error);
  EXPECT_THROW(DataLoader(ds, {.num_workers = -1}), Error);
  DataLoader with_batch_sampler(ds, {.batch_sampler = std::make_shared<data::BatchSampler>(seq, 3)});
  EXPECT_EQ(drain(with_batch_sampler).size(), 2u);
}

}  // namespace
}  // namespace strider::testing
