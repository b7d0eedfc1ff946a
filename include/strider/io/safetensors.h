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
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "strider/core/tensor.h"

namespace strider::io {

// The format's limit on the JSON header, so a reader never allocates more for it.
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = uint64_t{100} << 20;

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

// One tensor as a safetensors header lists it: [begin, end) is its byte range in the data section.
struct SafetensorsHeaderEntry {
  std::string name;
  ScalarType dtype = kFloat;
  DimVector shape;
  uint64_t begin = 0, end = 0;
};

struct SafetensorsHeader {
  std::vector<SafetensorsHeaderEntry> entries;  // in the JSON object's (sorted) order
  Metadata metadata;                            // every "__metadata__" entry, checksum included
};

// Parses and validates the JSON header `json` of the file `path` (named in errors): the JSON
// types, dtypes, shapes (non-negative, no overflow) and data_offsets holding exactly the shape's
// bytes. It does not check that the entries tile the data section; load_safetensors does.
SafetensorsHeader parse_safetensors_header(const std::string& json, const std::string& path);

}  // namespace strider::io
