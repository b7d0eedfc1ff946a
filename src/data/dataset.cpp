#include "strider/data/dataset.h"

namespace strider::data {

void SampleStream::skip(int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (!next()) return;
}

}  // namespace strider::data
