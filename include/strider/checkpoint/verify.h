#pragma once
// Verifying a whole checkpoint offline (`strider ckpt verify`): the manifest, then every byte
// of every file it lists against its block checksums.
#include <cstdint>
#include <string>

#include "strider/checkpoint/manifest.h"

namespace strider::checkpoint {

struct VerifyReport {
  std::string dir;     // the checkpoint verified (a run directory resolves to its latest)
  Manifest manifest;
  uint64_t bytes = 0;  // in all files
};

// Throws strider::Error naming the file, the block and the tensors in it at the first
// mismatch, missing or truncated file.
VerifyReport verify_checkpoint(const std::string& path);

// The cheap part of verify_checkpoint (`strider ckpt inspect`): each file `manifest` (read from
// `dir`) lists exists with its size, its header passes its block checksums and lists exactly
// the tensors, dtypes, shapes, byte offsets and rows the manifest places in it. Reads only the
// headers. Throws strider::Error naming the file and the tensor.
void verify_file_headers(const std::string& dir, const Manifest& manifest);

}  // namespace strider::checkpoint
