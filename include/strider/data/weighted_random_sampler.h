#pragma once
// torch.utils.data.WeightedRandomSampler: num_samples indices drawn with probability
// proportional to weights. With replacement, each draw is independent (inverse of the
// cumulative weights); without, it is weighted sampling without replacement (each index gets
// the key log(u) / w and the largest keys win, Efraimidis and Spirakis), which draws the same
// distribution as PyTorch's sequential multinomial. Seeded by seed + epoch, counter-based.
#include <cstdint>
#include <vector>

#include "strider/data/sampler.h"

namespace strider::data {

class WeightedRandomSampler : public Sampler {
 public:
  // Throws strider::Error for an empty or negative or non-finite weight list, a list summing to
  // zero, num_samples <= 0, or (without replacement) more samples than non-zero weights.
  WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement = true,
                        uint64_t seed = 0);
  std::vector<int64_t> indices() const override;

 private:
  std::vector<double> weights_, cumulative_;
  int64_t num_samples_;
  bool replacement_;
  uint64_t seed_;
};

}  // namespace strider::data
