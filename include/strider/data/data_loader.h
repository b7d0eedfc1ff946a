#pragma once
// torch.utils.data.DataLoader over a map-style Dataset or an IterableDataset.
//
// Batches come out in the same order, with the same contents, whatever num_workers is: batch
// b of a pass is fixed by the sampler (map-style) or by the stream position (iterable), workers
// only compute batches ahead, and next() hands them out in batch order. num_workers = 0 reads
// in the caller's thread; otherwise num_workers background threads keep up to
// num_workers * prefetch_factor batches ready. A worker's exception is rethrown by next() when
// its batch is due, as a strider::Error naming the batch, the sample index and the message.
// Stopping early is safe: a later pass, load_state(), set_epoch() or the destructor stops and
// joins the workers (none is left blocked).
//
// Passes and positions: next() continues from state(); at the end of an epoch it returns
// nullopt once and the position moves to the next epoch (PyTorch users call set_epoch on the
// sampler; here the loader does it at the start of each pass, from its position). A range-for
// is one pass from the current position, so `for (e...) for (const Batch& b : loader)` visits
// epoch after epoch, and a loop that breaks resumes where it stopped.
//
// Distributed map-style loading: pass a DistributedSampler (sampler.h has the resume rule;
// state() counts global samples). An IterableDataset splits by rank itself when num_replicas >
// 1: global batch g is stream samples [g * B * W, (g + 1) * B * W), and rank r takes
// [g * B * W + r * B, g * B * W + (r + 1) * B). Every rank takes the same number of batches (or
// their collectives would disagree): the last, incomplete global batch of R samples is dropped
// on every rank with drop_last; otherwise, as DistributedSampler pads, it is repeated from its
// start up to ceil(R / W) * W samples and rank r takes the r-th of W equal shares. Finding R
// reads past this rank's share once per epoch, and a whole global batch costs each rank but
// the last one read of the global batch's last sample.
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>

#include "strider/data/batch_sampler.h"
#include "strider/data/collate.h"
#include "strider/data/dataset.h"
#include "strider/data/position.h"
#include "strider/data/sampler.h"
#include "strider/data/transform.h"

namespace strider::data {

// Defaults as torch.utils.data.DataLoader's.
struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;  // a RandomSampler(seed) when no sampler is given
  uint64_t seed = 0;     // the shuffle's and the transforms' seed
  bool drop_last = false;
  int64_t num_workers = 0;
  int64_t prefetch_factor = 2;  // batches ready per worker
  // At most one of sampler / batch_sampler; batch_sampler excludes batch_size != 1, shuffle and
  // drop_last (it has its own), as in PyTorch. Map-style datasets only.
  std::shared_ptr<Sampler> sampler = nullptr;
  std::shared_ptr<BatchSampler> batch_sampler = nullptr;
  SampleTransform transform = nullptr;  // per sample, before collate (context: seed, epoch, index)
  CollateFn collate = nullptr;  // empty: default_collate
  // IterableDataset only: this rank's share of each global batch.
  int64_t num_replicas = 1, rank = 0;
};

class DataLoader {
 public:
  // Throws strider::Error for a null dataset and for options that contradict each other (each
  // message names the options and the fix).
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});
  DataLoader(std::shared_ptr<const IterableDataset> dataset, DataLoaderOptions options = {});
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // The next batch of the epoch in progress, or nullopt at its end (then the position is the
  // start of the next epoch).
  std::optional<Batch> next();

  // The position of the next batch; a checkpoint saves it.
  Position state() const { return position_; }
  // Continues from a saved position at the next call to next(). Map-style: samples_consumed must
  // be a multiple of the sampler's num_replicas (a whole number of global batches is).
  void load_state(Position position);
  // Starts `epoch` from its beginning.
  void set_epoch(int64_t epoch) { load_state({epoch, 0}); }

  // Map-style: this rank's batches in a whole epoch.
  int64_t batches_per_epoch() const;
  const DataLoaderOptions& options() const { return options_; }

  // One pass from the current position (see above). The batch a dereference returns stays
  // valid until the iterator advances.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = const Batch*;
    using reference = const Batch&;
    Iterator() = default;
    const Batch& operator*() const { return *current_; }
    const Batch* operator->() const { return &*current_; }
    Iterator& operator++();
    void operator++(int) { ++*this; }
    bool operator==(std::default_sentinel_t) const { return !current_.has_value(); }

   private:
    friend class DataLoader;
    explicit Iterator(DataLoader* loader);
    DataLoader* loader_ = nullptr;
    std::optional<Batch> current_;
  };
  Iterator begin() { return Iterator(this); }
  std::default_sentinel_t end() { return {}; }

 private:
  struct Pass;  // the running epoch: its batches and the workers computing them
  void start_pass();
  void stop_pass();

  std::shared_ptr<const Dataset> map_;
  std::shared_ptr<const IterableDataset> iterable_;
  DataLoaderOptions options_;
  std::shared_ptr<BatchSampler> batches_;  // map-style
  Position position_;
  std::unique_ptr<Pass> pass_;
};

}  // namespace strider::data
