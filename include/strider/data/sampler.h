#pragma once
// Samplers: which dataset indices an epoch visits, in which order (torch.utils.data.Sampler).
//
// The resume rule (every sampler here follows it):
//  * An epoch has a GLOBAL order of dataset indices that is a function of (seed, epoch, dataset
//    size) only, never of the world size or the number of workers.
//  * A distributed sampler of W replicas completes the global order to a multiple of W (padding
//    by repeating its start, or dropping its tail, as PyTorch's DistributedSampler does) and
//    gives rank r the positions r, r + W, r + 2W, ... So the first B local indices of every rank
//    together are global positions [0, B * W): a step's global batch is a contiguous piece of
//    the global order, and rank r holds its slice.
//  * A position (epoch, samples_consumed) counts global samples. remaining(samples_consumed)
//    continues the global order from there, sliced for THIS sampler's world size. Resuming at
//    another world size W' with the same global batch size (B' * W' == B * W) therefore gives
//    exactly the global batches the uninterrupted run would have had: the same samples in the
//    same order. Only the padding that completes the epoch's last global batch (or the tail that
//    drop_last removes) is chosen for the world size that reaches it; it is the same when the
//    dataset size is a multiple of both world sizes.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace strider::data {

class Sampler {
 public:
  virtual ~Sampler() = default;
  // The epoch whose order indices() returns (a DataLoader sets it at the start of each pass).
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }
  // This replica's indices for epoch(), in order.
  virtual std::vector<int64_t> indices() const = 0;
  // How many replicas share the global order (1 unless distributed); one local sample stands
  // for this many global samples.
  virtual int64_t num_replicas() const { return 1; }
  // This replica's indices after `global_samples_consumed` samples of the epoch: indices() from
  // position global_samples_consumed / num_replicas(). Throws strider::Error when the count is
  // negative, beyond the epoch, or not a multiple of num_replicas().
  std::vector<int64_t> remaining(int64_t global_samples_consumed) const;

 private:
  int64_t epoch_ = 0;
};

// 0, 1, ..., size - 1 in every epoch.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t size);
  std::vector<int64_t> indices() const override;

 private:
  int64_t size_;
};

struct RandomSamplerOptions {
  bool replacement = false;
  // Indices per epoch; unset: the dataset size. Without replacement and above the size, whole
  // permutations follow each other (as PyTorch does).
  std::optional<int64_t> num_samples = std::nullopt;
  uint64_t seed = 0;
};

// A seeded random order per epoch: a permutation (without replacement) or independent uniform
// draws (with replacement), from counter-based random numbers keyed by seed + epoch, so the
// order is the same on every machine and thread.
class RandomSampler : public Sampler {
 public:
  explicit RandomSampler(int64_t size, RandomSamplerOptions options = {});
  std::vector<int64_t> indices() const override;
  int64_t num_samples() const { return num_samples_; }

 private:
  int64_t size_, num_samples_;
  RandomSamplerOptions options_;
};

// A permutation of 0..n-1 that is a pure function of (n, seed, stream name).
std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed, std::string_view stream);

}  // namespace strider::data
