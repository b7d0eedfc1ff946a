#pragma once
// Turning a list of samples into a batch. The default stacks each field on a new dim 0, as
// PyTorch's default_collate does for tensors; a user's function replaces it (pad variable-length
// sequences, keep a field as a list, change the layout of the whole batch).
#include <functional>
#include <vector>

#include "strider/data/sample.h"

namespace strider::data {

using CollateFn = std::function<Batch(std::vector<Sample>)>;

// Stacks field by field. Throws strider::Error when the list is empty, when a sample lacks a
// field of the first sample or has another (naming the field and the sample's position), or
// when a field's shapes or dtypes differ (naming the field, both positions and both shapes).
Batch default_collate(std::vector<Sample> samples);

}  // namespace strider::data
