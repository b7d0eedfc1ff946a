#include "strider/data/transform.h"

#include "strider/core/counter_rng.h"
#include "strider/core/error.h"

namespace strider::data {

double SampleContext::uniform(uint64_t draw) const {
  // The key names everything but the sample; the sample index is Philox's counter.
  const std::string name = stream + "|epoch " + std::to_string(epoch) + "|draw " + std::to_string(draw);
  return counter_uniform(counter_rng_key(seed, name), static_cast<uint64_t>(index));
}

SampleContext SampleContext::substream(const std::string& name) const {
  SampleContext c = *this;
  c.stream = stream + "/" + name;
  return c;
}

Tensor Compose::operator()(const Tensor& x, const SampleContext& ctx) const {
  Tensor y = x;
  for (size_t i = 0; i < transforms_.size(); ++i) y = transforms_[i](y, ctx.substream(std::to_string(i)));
  return y;
}

SampleTransform apply_to(std::string name, Transform transform) {
  STRIDER_CHECK(transform != nullptr, "apply_to", "got an empty transform for field '", name, "'");
  return [name = std::move(name), transform = std::move(transform)](Sample s, const SampleContext& ctx) {
    s[name] = transform(s.at(name), ctx.substream(name));
    return s;
  };
}

}  // namespace strider::data
