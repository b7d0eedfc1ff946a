#pragma once
// A safetensors file as a dataset: one tensor per field, the first dimension indexing samples
// (images [N, C, H, W] and labels [N] side by side, as datasets are often exported).
#include <cstdint>
#include <string>
#include <vector>

#include "strider/io/safetensors.h"

namespace strider::io {

struct SafetensorsDataset {
  TensorMap fields;  // every field has at least one dimension, the first of size `size`
  int64_t size = 0;  // samples
};

// Loads `path` with load_safetensors (every structural check, and the checksum when present)
// and keeps `fields` (all when empty). Errors name the file: a file with no tensor, a field
// that is not there (listing those that are), a 0-d field, or a field whose first dimension
// differs from the first field's (naming both fields and sizes).
SafetensorsDataset load_safetensors_dataset(const std::string& path, const std::vector<std::string>& fields = {});

}  // namespace strider::io
