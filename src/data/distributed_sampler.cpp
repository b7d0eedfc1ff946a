#include "strider/data/distributed_sampler.h"

#include <numeric>

#include "strider/core/error.h"

namespace strider::data {

DistributedSampler::DistributedSampler(int64_t size, DistributedSamplerOptions o) : size_(size), options_(o) {
  STRIDER_CHECK(o.num_replicas > 0, "DistributedSampler", "num_replicas must be positive, got ", o.num_replicas);
  STRIDER_CHECK(o.rank >= 0 && o.rank < o.num_replicas, "DistributedSampler", "rank ", o.rank,
                " is outside [0, ", o.num_replicas - 1, "] for ", o.num_replicas, " replicas");
  STRIDER_CHECK(size > 0, "DistributedSampler", "needs a non-empty dataset, got size ", size);
  STRIDER_CHECK(!o.drop_last || size >= o.num_replicas, "DistributedSampler", "with drop_last, a dataset of ", size,
                " samples leaves nothing for ", o.num_replicas, " replicas; use fewer replicas or drop_last = false");
  // PyTorch: ceil(size / W) padded, or floor(size / W) with drop_last.
  num_samples_ = o.drop_last ? size / o.num_replicas : (size + o.num_replicas - 1) / o.num_replicas;
}

std::vector<int64_t> DistributedSampler::global_order() const {
  std::vector<int64_t> order;
  if (options_.shuffle) {
    order = seeded_permutation(size_, options_.seed + static_cast<uint64_t>(epoch()), "DistributedSampler");
  } else {
    order.resize(static_cast<size_t>(size_));
    std::iota(order.begin(), order.end(), 0);
  }
  const int64_t total = total_size();
  // Pad by repeating the start (more than once when the padding exceeds the dataset), or cut.
  for (int64_t i = size_; i < total; ++i) order.push_back(order[static_cast<size_t>((i - size_) % size_)]);
  order.resize(static_cast<size_t>(total));
  return order;
}

std::vector<int64_t> DistributedSampler::indices() const {
  const std::vector<int64_t> order = global_order();
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(num_samples_));
  for (int64_t i = options_.rank; i < total_size(); i += options_.num_replicas) mine.push_back(order[static_cast<size_t>(i)]);
  return mine;
}

}  // namespace strider::data
