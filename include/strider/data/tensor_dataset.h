#pragma once
// torch.utils.data.TensorDataset with named fields: tensors already in memory whose first
// dimension is the sample. get(i) returns each field's row i (a view, no copy).
#include <string>

#include "strider/data/dataset.h"

namespace strider::data {

class TensorDataset : public Dataset {
 public:
  // Throws strider::Error when there is no field, a tensor is undefined or 0-d, or the fields'
  // first dimensions differ (the message names every field with its first dimension).
  explicit TensorDataset(Sample::Fields fields);
  TensorDataset(std::initializer_list<Sample::Fields::value_type> fields)
      : TensorDataset(Sample::Fields(fields)) {}

  int64_t size() const override { return size_; }
  // Throws strider::Error naming the index and the size when index is outside [0, size()).
  Sample get(int64_t index) const override;
  const Sample::Fields& tensors() const { return fields_; }

 private:
  Sample::Fields fields_;
  int64_t size_ = 0;
};

}  // namespace strider::data
