#include "strider/data/tensor_dataset.h"

#include "strider/core/error.h"

namespace strider::data {
namespace {

std::string first_dims(const Sample::Fields& fields) {
  std::string out;
  for (const auto& [name, t] : fields)
    out += (out.empty() ? "" : ", ") + name + ": " + (t.defined() && t.dim() > 0 ? std::to_string(t.size(0)) : "-");
  return out;
}

}  // namespace

TensorDataset::TensorDataset(Sample::Fields fields) : fields_(std::move(fields)) {
  STRIDER_CHECK(!fields_.empty(), "TensorDataset", "needs at least one named tensor");
  for (const auto& [name, t] : fields_)
    STRIDER_CHECK(t.defined() && t.dim() > 0, "TensorDataset", "field '", name,
                  "' is ", t.defined() ? "0-d" : "undefined", "; every field needs a first dimension, the sample");
  size_ = fields_.begin()->second.size(0);
  for (const auto& [name, t] : fields_)
    STRIDER_CHECK(t.size(0) == size_, "TensorDataset", "the fields' first dimensions differ (",
                  first_dims(fields_), "); every field needs one row per sample");
}

Sample TensorDataset::get(int64_t index) const {
  STRIDER_CHECK(index >= 0 && index < size_, "TensorDataset::get", "index ", index,
                " is out of range for a dataset of ", size_, " samples (valid: 0 to ", size_ - 1, ")");
  Sample s;
  for (const auto& [name, t] : fields_) s[name] = t.select(0, index);
  return s;
}

}  // namespace strider::data
