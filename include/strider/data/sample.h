#pragma once
// A sample, and a batch, is a set of named tensors ("image", "label", ...), like the dicts
// PyTorch users return from __getitem__. An ordered map rather than a struct: fields are the
// user's (any number, any names), the order is deterministic (collate, printing and messages
// walk the fields by name), and samples have a handful of fields, so lookup cost is nothing next
// to the tensors. Lookup of a missing field is a strider::Error naming it and the fields present.
#include <initializer_list>
#include <map>
#include <string>
#include <utility>

#include "strider/core/tensor.h"

namespace strider::data {

class Sample {
 public:
  using Fields = std::map<std::string, Tensor>;

  Sample() = default;
  Sample(std::initializer_list<Fields::value_type> fields) : fields_(fields) {}
  explicit Sample(Fields fields) : fields_(std::move(fields)) {}

  // The field `name`; throws strider::Error naming the fields this sample has.
  const Tensor& at(const std::string& name) const;
  // Inserts an undefined tensor when absent (std::map's operator[]).
  Tensor& operator[](const std::string& name) { return fields_[name]; }
  bool contains(const std::string& name) const { return fields_.count(name) != 0; }
  size_t size() const { return fields_.size(); }
  bool empty() const { return fields_.empty(); }
  const Fields& fields() const { return fields_; }
  Fields::const_iterator begin() const { return fields_.begin(); }
  Fields::const_iterator end() const { return fields_.end(); }
  // "image, label": the names, for messages.
  std::string names() const;

 private:
  Fields fields_;
};

// A batch is the same kind of value: each field holds the samples' tensors stacked on a new dim 0
// (or whatever a user's collate function made).
using Batch = Sample;

}  // namespace strider::data
