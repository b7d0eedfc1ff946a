#pragma once
// What a DataLoader's pass computes: batches of a map-style dataset from a list of index lists,
// or batches read from an IterableDataset's stream. Each error names the batch and the sample.
#include <memory>
#include <vector>

#include "batch_pipeline.h"
#include "strider/data/collate.h"
#include "strider/data/dataset.h"
#include "strider/data/transform.h"

namespace strider::data::detail {

// Shared by every source of a pass; read-only while the pass runs.
struct PassPlan {
  int64_t epoch = 0;
  uint64_t seed = 0;
  int64_t first_batch = 0;  // the epoch's number of the pass's batch 0, for messages
  SampleTransform transform;
  CollateFn collate;
};

std::unique_ptr<BatchSource> make_map_source(std::shared_ptr<const Dataset> dataset,
                                             std::shared_ptr<const std::vector<std::vector<int64_t>>> batches,
                                             std::shared_ptr<const PassPlan> plan);

// Rank `rank` of `num_replicas` reads batch b (of the pass, which starts at stream sample
// `first_sample`) from samples first_sample + b * batch_size * num_replicas + rank * batch_size;
// the last, incomplete global batch is dropped or padded alike on every rank (data_loader.h).
struct StreamSlice {
  int64_t first_sample = 0, batch_size = 1, num_replicas = 1, rank = 0;
  bool drop_last = false;
};
std::unique_ptr<BatchSource> make_stream_source(std::shared_ptr<const IterableDataset> dataset, StreamSlice slice,
                                                WorkerInfo worker, std::shared_ptr<const PassPlan> plan);

}  // namespace strider::data::detail
