#include "strider/data/sampler.h"

#include <numeric>
#include <string>

#include "strider/core/counter_rng.h"
#include "strider/core/error.h"

namespace strider::data {

std::vector<int64_t> Sampler::remaining(int64_t consumed) const {
  std::vector<int64_t> all = indices();
  const int64_t replicas = num_replicas();
  const int64_t total = static_cast<int64_t>(all.size()) * replicas;
  STRIDER_CHECK(consumed >= 0 && consumed <= total, "Sampler::remaining", "position of ", consumed,
                " samples is outside epoch ", epoch(), "'s ", total, " global samples; was it saved for another dataset?");
  STRIDER_CHECK(consumed % replicas == 0, "Sampler::remaining", "position of ", consumed,
                " global samples is not a multiple of the ", replicas,
                " replicas; resume at a whole global batch with the same global batch size");
  all.erase(all.begin(), all.begin() + consumed / replicas);
  return all;
}

std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed, std::string_view stream) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  const uint64_t key = counter_rng_key(seed, stream);
  // Fisher-Yates: position i swaps with a uniform j in [0, i]; 53 random bits per draw.
  for (int64_t i = n - 1; i > 0; --i) {
    auto j = static_cast<int64_t>(counter_uniform(key, static_cast<uint64_t>(i)) * static_cast<double>(i + 1));
    if (j > i) j = i;
    std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(j)]);
  }
  return p;
}

SequentialSampler::SequentialSampler(int64_t size) : size_(size) {
  STRIDER_CHECK(size >= 0, "SequentialSampler", "size must be >= 0, got ", size);
}

std::vector<int64_t> SequentialSampler::indices() const {
  std::vector<int64_t> out(static_cast<size_t>(size_));
  std::iota(out.begin(), out.end(), 0);
  return out;
}

RandomSampler::RandomSampler(int64_t size, RandomSamplerOptions o)
    : size_(size), num_samples_(o.num_samples.value_or(size)), options_(o) {
  STRIDER_CHECK(size > 0, "RandomSampler", "needs a non-empty dataset, got size ", size);
  STRIDER_CHECK(num_samples_ > 0, "RandomSampler", "num_samples must be positive, got ", num_samples_);
}

std::vector<int64_t> RandomSampler::indices() const {
  const uint64_t seed = options_.seed + static_cast<uint64_t>(epoch());
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num_samples_));
  if (options_.replacement) {
    const uint64_t key = counter_rng_key(seed, "RandomSampler/replacement");
    for (int64_t i = 0; i < num_samples_; ++i) {
      auto k = static_cast<int64_t>(counter_uniform(key, static_cast<uint64_t>(i)) * static_cast<double>(size_));
      out.push_back(std::min(k, size_ - 1));
    }
    return out;
  }
  // Whole permutations one after the other, the last one cut.
  for (int64_t round = 0; static_cast<int64_t>(out.size()) < num_samples_; ++round) {
    std::vector<int64_t> p = seeded_permutation(size_, seed, "RandomSampler/" + std::to_string(round));
    const auto take = std::min<int64_t>(size_, num_samples_ - static_cast<int64_t>(out.size()));
    out.insert(out.end(), p.begin(), p.begin() + take);
  }
  return out;
}

}  // namespace strider::data
