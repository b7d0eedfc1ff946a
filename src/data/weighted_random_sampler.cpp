#include "strider/data/weighted_random_sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "strider/core/counter_rng.h"
#include "strider/core/error.h"

namespace strider::data {

WeightedRandomSampler::WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement,
                                             uint64_t seed)
    : weights_(std::move(weights)), num_samples_(num_samples), replacement_(replacement), seed_(seed) {
  STRIDER_CHECK(!weights_.empty(), "WeightedRandomSampler", "needs at least one weight");
  STRIDER_CHECK(num_samples > 0, "WeightedRandomSampler", "num_samples must be positive, got ", num_samples);
  double sum = 0;
  int64_t nonzero = 0;
  for (size_t i = 0; i < weights_.size(); ++i) {
    STRIDER_CHECK(std::isfinite(weights_[i]) && weights_[i] >= 0, "WeightedRandomSampler", "weight ", i, " is ",
                  weights_[i], "; weights must be finite and >= 0");
    sum += weights_[i];
    nonzero += weights_[i] > 0;
    cumulative_.push_back(sum);
  }
  STRIDER_CHECK(sum > 0, "WeightedRandomSampler", "the weights sum to zero; at least one must be positive");
  STRIDER_CHECK(replacement || num_samples <= nonzero, "WeightedRandomSampler", "cannot draw ", num_samples,
                " samples without replacement from ", nonzero, " non-zero weights; lower num_samples or allow replacement");
}

std::vector<int64_t> WeightedRandomSampler::indices() const {
  const uint64_t key = counter_rng_key(seed_ + static_cast<uint64_t>(epoch()), "WeightedRandomSampler");
  const auto n = static_cast<int64_t>(weights_.size());
  std::vector<int64_t> out;
  if (replacement_) {
    for (int64_t i = 0; i < num_samples_; ++i) {
      const double u = counter_uniform(key, static_cast<uint64_t>(i)) * cumulative_.back();
      auto k = std::upper_bound(cumulative_.begin(), cumulative_.end(), u) - cumulative_.begin();
      // Never a zero-weight index: step back past empty ranges at the top.
      while (k >= n || weights_[static_cast<size_t>(k)] == 0) --k;
      out.push_back(k);
    }
    return out;
  }
  // Efraimidis-Spirakis: key log(u) / w, largest first; zero weights never win.
  std::vector<std::pair<double, int64_t>> keyed;
  for (int64_t i = 0; i < n; ++i) {
    const double w = weights_[static_cast<size_t>(i)];
    if (w == 0) continue;
    const double u = std::max(counter_uniform(key, static_cast<uint64_t>(i)), 1e-300);
    keyed.emplace_back(std::log(u) / w, i);
  }
  std::partial_sort(keyed.begin(), keyed.begin() + num_samples_, keyed.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  for (int64_t i = 0; i < num_samples_; ++i) out.push_back(keyed[static_cast<size_t>(i)].second);
  return out;
}

}  // namespace strider::data
