#pragma once
// Batches from an in-memory image dataset: seeded shuffling per epoch, an optional distributed
// slice (each rank a disjoint part of the same permutation), normalization to float, the
// requested memory format, and a background thread that prepares the next batch while the
// current one trains.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "strider/io/idx.h"

namespace strider::io {

struct Batch {
  Tensor input;   // images [B, C, H, W] in the loader's dtype and memory format, or token ids [B, T]
  Tensor target;  // int64 class labels [B], or next tokens [B, T]
};

// Which indices of a dataset this process visits in an epoch: a seeded permutation (or the
// identity), padded to a multiple of num_replicas and split by rank like PyTorch's
// DistributedSampler.
class DistributedSampler {
 public:
  DistributedSampler(int64_t dataset_size, int64_t num_replicas = 1, int64_t rank = 0, bool shuffle = true,
                     uint64_t seed = 0, bool drop_last = false);
  std::vector<int64_t> indices(int64_t epoch) const;
  int64_t num_samples() const { return num_samples_; }

 private:
  int64_t size_, replicas_, rank_, num_samples_;
  bool shuffle_, drop_last_;
  uint64_t seed_;
};

// batch_size, shuffle and drop_last default as torch.utils.data.DataLoader's.
struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  uint64_t seed = 0;
  bool drop_last = false;
  double mean = 0.0, std = 1.0;  // input = (pixel / 255 - mean) / std
  ScalarType dtype = kFloat;
  MemoryFormat memory_format = MemoryFormat::Contiguous;
  int64_t num_replicas = 1, rank = 0;
  bool prefetch = true;
};

class DataLoader {
 public:
  DataLoader(ImageDataset data, DataLoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Starts an epoch at its batch `first_batch` (a resumed run skips the batches it trained on);
  // next() then returns the remaining batches and nullopt at the end.
  void start_epoch(int64_t epoch, int64_t first_batch = 0);
  std::optional<Batch> next();
  int64_t batches_per_epoch() const;
  int64_t dataset_size() const { return data_.size(); }

 private:
  Batch make_batch(const std::vector<int64_t>& idx, int64_t begin, int64_t end) const;
  void stop_worker();

  ImageDataset data_;
  DataLoaderOptions o_;
  DistributedSampler sampler_;
  std::vector<int64_t> order_;
  int64_t cursor_ = 0;
  // Prefetch: a worker fills `ready_` up to two batches ahead.
  std::thread worker_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::optional<Batch>> ready_;
  std::exception_ptr worker_error_;  // rethrown by next() on the consumer's thread
  bool stop_ = false;
};

}  // namespace strider::io
