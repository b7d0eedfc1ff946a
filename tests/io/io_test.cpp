// IDX reading, the data loader and sampler, and safetensors checkpoints.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "support/idx_file.h"
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "support/compare.h"

namespace strider {
namespace {

std::string temp(const std::string& name) { return (std::filesystem::temp_directory_path() / ("strider_test_" + name)).string(); }

using testing::write_idx_gz;

TEST(Idx, ReadsGzipAndRejectsCorruptFiles) {
  const std::string p = temp("idx.gz");
  std::vector<uint8_t> px(2 * 3 * 4);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i);
  write_idx_gz(p, {2, 3, 4}, px);
  Tensor t = io::read_idx(p);
  EXPECT_EQ(t.sizes(), IntArrayRef({2, 3, 4}));
  EXPECT_EQ(t[1][2][3].item<int64_t>(), 23);
  write_idx_gz(p, {2, 3, 5}, px);  // claims more data than it has
  EXPECT_THROW(io::read_idx(p), Error);
  EXPECT_THROW(io::read_idx(temp("missing.gz")), Error);
  std::remove(p.c_str());
}

TEST(FashionMnist, LoadsDebianDataset) {
  if (!std::filesystem::exists(std::string(io::kFashionMnistDir) + "/t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist not installed";
  auto test = io::load_fashion_mnist(io::kFashionMnistDir, "test");
  EXPECT_EQ(test.images.sizes(), IntArrayRef({10000, 1, 28, 28}));
  EXPECT_EQ(test.labels.sizes(), IntArrayRef({10000}));
  EXPECT_EQ(amax(test.labels).item<int64_t>(), 9);
  EXPECT_THROW(io::load_fashion_mnist(io::kFashionMnistDir, "validation"), Error);
}

TEST(DistributedSampler, RanksSplitOneShuffledPermutation) {
  io::DistributedSampler r0(10, 3, 0, true, 7), r1(10, 3, 1, true, 7), r2(10, 3, 2, true, 7);
  std::multiset<int64_t> all;
  for (auto* s : {&r0, &r1, &r2})
    for (int64_t i : s->indices(1)) all.insert(i);
  EXPECT_EQ(all.size(), 12u);  // padded to a multiple of 3
  for (int64_t i = 0; i < 10; ++i) EXPECT_GE(all.count(i), 1u);
  EXPECT_NE(r0.indices(1), r0.indices(2));  // reshuffled per epoch
  EXPECT_EQ(r0.indices(1), io::DistributedSampler(10, 3, 0, true, 7).indices(1));
}

TEST(DataLoader, BatchesNormalizesAndLaysOut) {
  io::ImageDataset d{full({6, 1, 2, 2}, 255).to(kByte), arange(6)};
  for (bool prefetch : {true, false}) {
    io::DataLoader loader(d, {.batch_size = 4, .shuffle = true, .seed = 1, .mean = 0.5, .std = 0.25,
                              .memory_format = MemoryFormat::ChannelsLast, .prefetch = prefetch});
    loader.start_epoch(0);
    std::set<int64_t> seen;
    int batches = 0;
    while (auto b = loader.next()) {
      ++batches;
      EXPECT_TRUE(b->input.is_contiguous(MemoryFormat::ChannelsLast));
      EXPECT_EQ(b->input.stride(1), 1) << "one channel: PyTorch's to(channels_last) strides, not NCHW's";
      EXPECT_NEAR(amax(b->input).item<double>(), 2.0, 1e-6);  // (1 - 0.5) / 0.25
      for (double v : testing::values(b->target)) seen.insert(static_cast<int64_t>(v));
    }
    EXPECT_EQ(batches, 2);
    EXPECT_EQ(seen.size(), 6u);
  }
}

TEST(TextLoader, WindowsShiftTargetsAndSplitAcrossRanks) {
  const std::string path = (std::filesystem::temp_directory_path() / "strider_text_test.txt").string();
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>('a' + i % 26);
  std::ofstream(path, std::ios::binary) << text;
  io::TextDataset data = io::load_text_file(path);
  ASSERT_EQ(data.size(), 1000);
  io::TextSplit split = io::split_text(data, 0.1);
  EXPECT_EQ(split.train.size(), 900);
  EXPECT_EQ(split.val.size(), 100);
  EXPECT_EQ(split.val.tokens[0].item<int64_t>(), 'a' + 900 % 26);

  // 900 tokens, windows of 16 + 1 every 16 bytes: 56 windows; 2 ranks x 28, batches of 4 = 7.
  for (int r = 0; r < 2; ++r) {
    io::TextLoader loader(split.train, {.batch_size = 4, .seq_len = 16, .seed = 3, .num_replicas = 2, .rank = r});
    EXPECT_EQ(loader.windows(), 56);
    EXPECT_EQ(loader.batches_per_epoch(), 7);
    loader.start_epoch(0);
    int batches = 0;
    while (auto b = loader.next()) {
      ++batches;
      ASSERT_EQ(b->input.sizes(), IntArrayRef({4, 16}));
      ASSERT_EQ(b->input.dtype(), kLong);
      for (int64_t i = 0; i < 4; ++i) {
        for (int64_t t = 0; t < 16; ++t) {
          const int64_t in = b->input[i][t].item<int64_t>(), next = b->target[i][t].item<int64_t>();
          EXPECT_EQ(next, 'a' + (in - 'a' + 1) % 26);  // target = the following byte
        }
      }
    }
    EXPECT_EQ(batches, 7);
  }
  std::filesystem::remove(path);

  EXPECT_THROW(io::load_text_file("/nonexistent/strider.txt"), Error);
  EXPECT_THROW(io::TextLoader(io::TextDataset{data.tokens.narrow(0, 0, 10)}, {.seq_len = 16}), Error);
}

TEST(Safetensors, RoundTripAtomicAndVerified) {
  const std::string p = temp("ckpt.safetensors");
  io::TensorMap m = {{"a", rand({2, 3, 4, 5}).to(MemoryFormat::ChannelsLast)}, {"b", arange(7)},
                     {"c", rand({3}).to(kBFloat16)}};
  io::save_safetensors(p, m, {{"epoch", "3"}});
  auto f = io::load_safetensors(p);
  EXPECT_EQ(f.metadata["epoch"], "3");
  for (auto& [k, v] : m) EXPECT_TRUE(testing::all_close(f.tensors[k], v, 0, 0)) << k;
  // Flip one data byte: the checksum catches it.
  {
    std::fstream fs(p, std::ios::in | std::ios::out | std::ios::binary);
    fs.seekp(-3, std::ios::end);
    fs.put('\x7f');
  }
  EXPECT_THROW(io::load_safetensors(p), Error);
  // Truncated file.
  std::filesystem::resize_file(p, 20);
  EXPECT_THROW(io::load_safetensors(p), Error);
  std::remove(p.c_str());
}

}  // namespace
}  // namespace strider
