#pragma once
// torch.utils.data.BatchSampler: a sampler's indices in lists of batch_size (the last one
// shorter, or dropped with drop_last). Resumable as its sampler is (sampler.h).
#include <cstdint>
#include <memory>
#include <vector>

#include "strider/data/sampler.h"

namespace strider::data {

class BatchSampler {
 public:
  // Throws strider::Error for a null sampler or batch_size <= 0.
  BatchSampler(std::shared_ptr<Sampler> sampler, int64_t batch_size, bool drop_last = false);
  void set_epoch(int64_t epoch) { sampler_->set_epoch(epoch); }
  // The epoch's batches after `global_samples_consumed` samples of it (0: the whole epoch).
  std::vector<std::vector<int64_t>> batches(int64_t global_samples_consumed = 0) const;
  int64_t batch_size() const { return batch_size_; }
  bool drop_last() const { return drop_last_; }
  Sampler& sampler() const { return *sampler_; }

 private:
  std::shared_ptr<Sampler> sampler_;
  int64_t batch_size_;
  bool drop_last_;
};

}  // namespace strider::data
