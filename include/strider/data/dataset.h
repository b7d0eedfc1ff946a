#pragma once
// The two kinds of dataset torch.utils.data has.
//
// Map-style (`Dataset`): a size and a sample per index. `get` is const and must be safe to call
// from several threads at once (the DataLoader's workers do), which holds for a dataset that
// only reads its own members.
//
// Iterable (`IterableDataset`): a stream, for data larger than memory or read sequentially. It
// opens a `SampleStream` positioned at any sample of the stream, so a loader can resume in the
// middle and each worker can take its own share. Sharding is the loader's job, not the
// dataset's (unlike PyTorch, where each worker's copy of the dataset shards itself through
// get_worker_info()): the loader hands worker w of n the global batches w, w + n, ... and the
// worker skips the samples of the other batches, so the batches, and their order, do not
// depend on the number of workers. `WorkerInfo` still tells the stream who reads it.
#include <cstdint>
#include <memory>
#include <optional>

#include "strider/data/sample.h"

namespace strider::data {

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // The sample at `index` in [0, size()); thread-safe. Throws strider::Error on a bad index.
  virtual Sample get(int64_t index) const = 0;
};

// Who is reading a stream: worker `id` of `num_workers` (id 0 of 1 when the loader reads in the
// caller's thread), in `epoch`.
struct WorkerInfo {
  int64_t id = 0;
  int64_t num_workers = 1;
  int64_t epoch = 0;
};

class SampleStream {
 public:
  virtual ~SampleStream() = default;
  // The next sample, or nullopt at the end of the data.
  virtual std::optional<Sample> next() = 0;
  // Moves past `count` samples (fewer at the end of the data). Override it when the data can
  // seek; the default reads and drops them.
  virtual void skip(int64_t count);
};

class IterableDataset {
 public:
  virtual ~IterableDataset() = default;
  // A stream whose first sample is sample `first` of the whole data (0-based, counted over the
  // stream of this epoch). Called from the reading thread; may throw.
  virtual std::unique_ptr<SampleStream> open(int64_t first, const WorkerInfo& worker) const = 0;
};

}  // namespace strider::data
