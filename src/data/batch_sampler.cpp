#include "strider/data/batch_sampler.h"

#include "strider/core/error.h"

namespace strider::data {

BatchSampler::BatchSampler(std::shared_ptr<Sampler> sampler, int64_t batch_size, bool drop_last)
    : sampler_(std::move(sampler)), batch_size_(batch_size), drop_last_(drop_last) {
  STRIDER_CHECK(sampler_ != nullptr, "BatchSampler", "needs a sampler, got null");
  STRIDER_CHECK(batch_size > 0, "BatchSampler", "batch_size must be positive, got ", batch_size);
}

std::vector<std::vector<int64_t>> BatchSampler::batches(int64_t consumed) const {
  const std::vector<int64_t> idx = sampler_->remaining(consumed);
  std::vector<std::vector<int64_t>> out;
  for (size_t begin = 0; begin < idx.size(); begin += static_cast<size_t>(batch_size_)) {
    const size_t end = std::min(idx.size(), begin + static_cast<size_t>(batch_size_));
    if (drop_last_ && end - begin < static_cast<size_t>(batch_size_)) break;
    out.emplace_back(idx.begin() + static_cast<std::ptrdiff_t>(begin), idx.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return out;
}

}  // namespace strider::data
