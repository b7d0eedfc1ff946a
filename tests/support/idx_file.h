#pragma once
// Writes a gzip-compressed IDX file (unsigned-byte data), as the Fashion-MNIST files are.
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace strider::testing {

inline void write_idx_gz(const std::string& path, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  gzFile f = gzopen(path.c_str(), "wb");
  unsigned char head[4] = {0, 0, 0x08, static_cast<unsigned char>(dims.size())};
  gzwrite(f, head, 4);
  for (uint32_t d : dims) {
    unsigned char b[4] = {static_cast<unsigned char>(d >> 24), static_cast<unsigned char>(d >> 16),
                          static_cast<unsigned char>(d >> 8), static_cast<unsigned char>(d)};
    gzwrite(f, b, 4);
  }
  if (!data.empty()) gzwrite(f, data.data(), static_cast<unsigned>(data.size()));
  gzclose(f);
}

}  // namespace strider::testing
