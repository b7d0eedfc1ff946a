#pragma once
// Writes a safetensors file as a stream: the header is laid out from the entries' shapes first,
// then the data is appended in pieces of any size, so a file far larger than memory can be
// written from tensors produced one at a time (a checkpoint streamed unit by unit, a
// consolidation read shard by shard). Checksums are computed as the bytes go out: strider's
// whole-file CRC-32 ("strider.checksum", patched into the header at the end) and, for
// checkpoint manifests, a CRC-32C per block. The file appears under its name only when
// finished (temporary, fsync, rename, directory fsync); an unfinished writer leaves nothing.
#include <cstdint>
#include <string>
#include <vector>

#include "strider/core/tensor.h"
#include "strider/io/file_io.h"
#include "strider/io/safetensors.h"

namespace strider::io {

inline constexpr const char* kSafetensorsChecksumKey = "strider.checksum";

struct SafetensorsEntry {
  std::string name{};
  ScalarType dtype = kFloat;
  DimVector shape{};
};

struct SafetensorsWriterOptions {
  bool whole_file_checksum = true;  // record "strider.checksum" in the metadata
  uint64_t block_bytes = 0;         // > 0: also a CRC-32C of every block of this many bytes
};

struct WrittenSafetensors {
  uint64_t bytes = 0;                  // the file's size
  uint64_t header_bytes = 0;           // length prefix and JSON header; the data follows
  std::vector<uint64_t> offsets;       // where each entry's bytes start in the file
  std::vector<uint32_t> block_crc32c;  // with options.block_bytes
};

class SafetensorsWriter {
 public:
  SafetensorsWriter(std::string path, std::vector<SafetensorsEntry> entries, const Metadata& metadata = {},
                    SafetensorsWriterOptions options = {});
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // The next bytes of the data section: the entries' row-major bytes, in the entries' order.
  void write(const void* bytes, size_t n);
  void write(const Tensor& t);
  // After every entry's bytes: records the checksum, syncs and moves the file into place.
  WrittenSafetensors finish();

 private:
  std::string path_, tmp_;
  SafetensorsWriterOptions options_;
  File file_;
  WrittenSafetensors out_;
  uint64_t data_bytes_ = 0, written_ = 0;
  size_t checksum_at_ = 0;  // byte of the checksum's digits in the file (0: none)
  unsigned long crc32_ = 0;
  uint32_t block_crc_ = 0;
  uint64_t block_filled_ = 0;
  bool finished_ = false;
  void absorb(const char* p, size_t n);  // checksums and write
};

}  // namespace strider::io
