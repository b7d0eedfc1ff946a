#pragma once
// The header of a NumPy .npy file: magic "\x93NUMPY", version (1.0, 2.0 or 3.0), a little-endian
// header length (2 bytes in 1.0, 4 in 2.0 and 3.0), then a Python dict literal with exactly the
// keys 'descr', 'fortran_order' and 'shape', padded with spaces and ended by '\n'.
#include <cstdint>
#include <string>

#include "strider/core/int_array_ref.h"

namespace strider::io {

struct NpyHeader {
  int major = 1, minor = 0;
  std::string descr;  // a simple type string such as "<f4", "|u1", ">i8"
  bool fortran_order = false;
  DimVector shape;
  uint64_t data_offset = 0;  // where the array's bytes begin
};

// Parses the header at the start of `bytes` (`size` bytes); `name` (the file, or "archive.npz:
// entry") is named in errors. Checks the magic, the version, that the header fits in `size`,
// and the dict strictly (no other keys, each once, shape entries non-negative integers).
NpyHeader parse_npy_header(const unsigned char* bytes, uint64_t size, const std::string& name, const char* op);

}  // namespace strider::io
