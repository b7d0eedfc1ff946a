#pragma once
// torch.utils.data.distributed.DistributedSampler: each of num_replicas ranks its share of an
// epoch's global order (see sampler.h for the resume rule).
//
// The global order is the identity, or with shuffle a seeded permutation keyed by seed + epoch
// (the same on every rank). Without drop_last it is padded by repeating its start (again and
// again if the dataset is smaller than the padding) to ceil(size / W) * W; with drop_last it is
// cut to floor(size / W) * W. Rank r takes positions r, r + W, ...: num_samples() indices.
// With shuffle off the split and the padding are PyTorch's exactly.
#include <cstdint>
#include <vector>

#include "strider/data/sampler.h"

namespace strider::data {

struct DistributedSamplerOptions {
  int64_t num_replicas = 1;
  int64_t rank = 0;
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;
};

class DistributedSampler : public Sampler {
 public:
  // Throws strider::Error for a rank outside [0, num_replicas), a non-positive num_replicas, or
  // (with drop_last) a dataset smaller than num_replicas.
  DistributedSampler(int64_t size, DistributedSamplerOptions options = {});
  std::vector<int64_t> indices() const override;
  int64_t num_replicas() const override { return options_.num_replicas; }
  int64_t rank() const { return options_.rank; }
  int64_t num_samples() const { return num_samples_; }
  int64_t total_size() const { return num_samples_ * options_.num_replicas; }
  // The whole padded (or cut) global order of epoch(), before the split.
  std::vector<int64_t> global_order() const;

 private:
  int64_t size_, num_samples_;
  DistributedSamplerOptions options_;
};

}  // namespace strider::data
