#pragma once
// safetensors files: an 8-byte little-endian header length, a JSON header (dtype, shape,
// data_offsets per tensor; string metadata under "__metadata__"), then the raw bytes in logical
// (row-major) order. strider writes atomically (temporary file, fsync, rename) and records a
// CRC-32 of the data in the metadata, which load() verifies along with every offset.
#include <map>
#include <string>

#include "strider/core/tensor.h"

namespace strider::io {

using TensorMap = std::map<std::string, Tensor>;
using Metadata = std::map<std::string, std::string>;

void save_safetensors(const std::string& path, const TensorMap& tensors, const Metadata& metadata = {});

struct SafetensorsFile {
  TensorMap tensors;  // contiguous
  Metadata metadata;
};
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace strider::io
