#pragma once
// The central directory of a zip archive in memory (an .npz file): entry names, methods, sizes,
// CRC-32s and where each entry's bytes start, Zip64 included. Every offset and size is checked
// against the archive's length before it is used.
#include <cstdint>
#include <string>
#include <vector>

namespace strider::io {

struct ZipEntry {
  std::string name;
  int method = 0;  // 0 stored, 8 deflated
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0, uncompressed_size = 0;
  uint64_t data_offset = 0;  // the entry's bytes in the archive: [data_offset, data_offset + compressed_size)
};

// Errors name `path` and `op`: no end-of-directory record, a directory or entry outside the
// archive, multi-disk or encrypted archives, a local header that disagrees with the directory.
std::vector<ZipEntry> read_zip_directory(const unsigned char* data, uint64_t size, const std::string& path, const char* op);

// CRC-32 (zlib's) of n bytes.
uint32_t zip_crc32(const unsigned char* data, uint64_t n);

}  // namespace strider::io
