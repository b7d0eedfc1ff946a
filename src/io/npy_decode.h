#pragma once
// Turns a .npy image in memory (a whole file, or an .npz entry) into a tensor: the dtype
// mapping, byte order, Fortran strides, and the choice between viewing the bytes and copying.
#include <cstdint>
#include <memory>
#include <string>

#include "strider/core/tensor.h"

namespace strider::io {

// `bytes` (`size` bytes) holds a whole .npy image and lives as long as `owner`; a tensor that
// views the bytes instead of copying keeps `owner`. `name` is named in errors.
Tensor decode_npy(std::shared_ptr<const void> owner, unsigned char* bytes, uint64_t size, const std::string& name,
                  const char* op);

}  // namespace strider::io
