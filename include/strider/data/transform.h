#pragma once
// Per-sample transforms. A transform is a function of the tensor and a SampleContext; the
// context's random numbers are a pure function of (seed, epoch, sample index, stream name,
// draw), from counter-based Philox (core/counter_rng.h), so an augmented sample is the same
// whichever worker, thread or world size produced it, and a resumed run sees the same crops.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "strider/data/sample.h"

namespace strider::data {

struct SampleContext {
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t index = 0;   // the sample's dataset index (or stream position for an IterableDataset)
  std::string stream;  // which transform draws: Compose names its steps "0", "1", ...
  // Uniform on [0, 1): draw number `draw` of this sample's stream.
  double uniform(uint64_t draw) const;
  // A context for a nested stream ("<stream>/<name>").
  SampleContext substream(const std::string& name) const;
};

using Transform = std::function<Tensor(const Tensor&, const SampleContext&)>;
// What a DataLoader applies to each sample before collate.
using SampleTransform = std::function<Sample(Sample, const SampleContext&)>;

// Applies transforms in order, each with its own random stream (its position in the list), so
// adding a step does not change the draws of the others before it.
class Compose {
 public:
  Compose(std::vector<Transform> transforms) : transforms_(std::move(transforms)) {}
  Tensor operator()(const Tensor& x, const SampleContext& ctx) const;

 private:
  std::vector<Transform> transforms_;
};

// A SampleTransform that replaces field `name` by transform(field). A sample without the field
// is a strider::Error naming it and the fields present.
SampleTransform apply_to(std::string name, Transform transform);

}  // namespace strider::data
