#include "strider/data/collate.h"

#include "strider/core/error.h"
#include "strider/ops/cat.h"

namespace strider::data {

Batch default_collate(std::vector<Sample> samples) {
  STRIDER_CHECK(!samples.empty(), "default_collate", "got no samples; a batch needs at least one");
  const Sample& first = samples.front();
  for (size_t i = 1; i < samples.size(); ++i)
    STRIDER_CHECK(samples[i].size() == first.size(), "default_collate", "sample ", i, " of the batch has fields [",
                  samples[i].names(), "] but sample 0 has [", first.names(),
                  "]; every sample must have the same fields (or pass your own collate)");
  Batch batch;
  std::vector<Tensor> column(samples.size());
  for (const auto& [name, t0] : first) {
    for (size_t i = 0; i < samples.size(); ++i) {
      STRIDER_CHECK(samples[i].contains(name), "default_collate", "sample ", i, " of the batch has no field '", name,
                    "' (it has [", samples[i].names(), "])");
      const Tensor& t = samples[i].at(name);
      STRIDER_CHECK(t.defined() && t.sizes() == t0.sizes() && t.dtype() == t0.dtype(), "default_collate", "field '",
                    name, "': sample ", i, " is ", t.defined() ? to_string(t.dtype()) : "undefined", " ",
                    t.defined() ? t.sizes() : IntArrayRef(), " but sample 0 is ", to_string(t0.dtype()), " ",
                    t0.sizes(), "; stacking needs equal shapes and dtypes (resize or crop first, or pass your own collate)");
      column[i] = t;
    }
    batch[name] = ops::stack(column, 0);
  }
  return batch;
}

}  // namespace strider::data
