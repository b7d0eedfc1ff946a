#pragma once
// SHA-256 (FIPS 180-4), for fingerprints that runs compare: the trainer's params_sha256 and
// optimizer_sha256 (identical bits give identical digests on every machine).
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "strider/core/tensor.h"

namespace strider::io {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t bytes);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // The digest as 64 lowercase hex digits; the object is spent afterwards.
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> block_{};
  size_t used_ = 0;
  uint64_t total_bytes_ = 0;
};

// A digest of named tensors in name order: each name, dtype, shape, and the values in logical
// (row-major) order, so the memory format and how the tensor was sharded do not matter.
std::string tensors_sha256(const std::map<std::string, Tensor>& tensors);

}  // namespace strider::io
