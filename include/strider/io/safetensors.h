#pragma once
// safetensors files: an 8-byte little-endian header length, a JSON header (dtype, shape,
// data_offsets per tensor; string metadata under "__metadata__"), then the raw bytes in logical
// (row-major) order.
//
// strider writes atomically (a temporary file, fsync, rename, fsync of the directory; stale
// temporaries of killed writers are removed by the next save) and records in the metadata
// "strider.checksum", a CRC-32 over the whole file (length, header with the checksum's own
// digits as zeros, data), so a flipped byte anywhere is caught on load.
//
// Loading validates everything before allocating: a regular file, the header length, the JSON
// types of every field, dtypes, shapes (no negative sizes, no element or byte count that
// overflows), offsets that cover the data section exactly with neither overlap nor gap, and the
// checksum when there is one. Files from other tools (PyTorch, Hugging Face) have none and load
// after the same structural checks. Any failure is a strider::Error naming the file and field.
#include <map>
#include <string>

#include "strider/core/tensor.h"

namespace strider::io {

using TensorMap = std::map<std::string, Tensor>;
using Metadata = std::map<std::string, std::string>;

// The format's name for a dtype ("F32", "BF16", "I64", ...).
const char* safetensors_dtype_name(ScalarType dtype);

void save_safetensors(const std::string& path, const TensorMap& tensors, const Metadata& metadata = {});

struct SafetensorsFile {
  TensorMap tensors;  // contiguous
  Metadata metadata;  // without the checksum entry
  bool checksummed = false;  // a strider checksum over the whole file was present and verified
};

struct SafetensorsLoadOptions {
  // Refuse files without strider's whole-file checksum (resuming training requires one).
  bool require_checksum = false;
};

SafetensorsFile load_safetensors(const std::string& path, const SafetensorsLoadOptions& options = {});

}  // namespace strider::io
