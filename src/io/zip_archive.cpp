#include "io/zip_archive.h"

#include <zlib.h>

#include <algorithm>

#include "strider/core/error.h"

namespace strider::io {
namespace {

uint64_t le(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

constexpr uint32_t kEndSig = 0x06054b50, kEnd64Sig = 0x06064b50, kLocator64Sig = 0x07064b50;
constexpr uint32_t kCentralSig = 0x02014b50, kLocalSig = 0x04034b50;

struct Directory {
  uint64_t entries = 0, offset = 0, size = 0;
};

// The end-of-central-directory record is the last 22 bytes plus a comment of up to 64 KiB.
Directory find_directory(const unsigned char* d, uint64_t size, const std::string& path, const char* op) {
  STRIDER_CHECK(size >= 22, op, path, " has ", size, " bytes: too short to be a zip archive (.npz)");
  const uint64_t lowest = size >= 22 + 65535 ? size - 22 - 65535 : 0;
  uint64_t pos = size - 22;
  for (;; --pos) {
    if (le(d + pos, 4) == kEndSig && le(d + pos + 20, 2) == size - pos - 22) break;
    STRIDER_CHECK(pos > lowest, op, path, " is not a zip archive (.npz): no end-of-central-directory record");
  }
  const unsigned char* e = d + pos;
  STRIDER_CHECK(le(e + 4, 2) == 0 && le(e + 6, 2) == 0 && le(e + 8, 2) == le(e + 10, 2), op, path,
                ": multi-disk zip archives are not supported");
  Directory dir{le(e + 10, 2), le(e + 16, 4), le(e + 12, 4)};
  if (dir.entries != 0xffff && dir.offset != 0xffffffff && dir.size != 0xffffffff) return dir;
  // Zip64: a locator right before the record points at the 64-bit record.
  STRIDER_CHECK(pos >= 20 && le(d + pos - 20, 4) == kLocator64Sig, op, path,
                ": the zip directory needs Zip64 fields but has no Zip64 locator");
  const uint64_t at = le(d + pos - 12, 8);
  STRIDER_CHECK(at <= pos - 20 && pos - 20 - at >= 56 && le(d + at, 4) == kEnd64Sig, op, path,
                ": the Zip64 end-of-directory record at byte ", at, " is missing or outside the archive");
  STRIDER_CHECK(le(d + at + 16, 4) == 0 && le(d + at + 20, 4) == 0, op, path, ": multi-disk zip archives are not supported");
  return {le(d + at + 32, 8), le(d + at + 48, 8), le(d + at + 40, 8)};
}

// Replaces 0xffffffff sizes and offset by the Zip64 extra field's 64-bit values, in its order.
void apply_zip64(ZipEntry& z, uint64_t& local, const unsigned char* extra, uint64_t n, const std::string& path,
                 const char* op) {
  const bool need_u = z.uncompressed_size == 0xffffffff, need_c = z.compressed_size == 0xffffffff,
             need_o = local == 0xffffffff;
  if (!need_u && !need_c && !need_o) return;
  for (uint64_t i = 0; i + 4 <= n;) {
    const uint64_t id = le(extra + i, 2), len = le(extra + i + 2, 2);
    STRIDER_CHECK(i + 4 + len <= n, op, path, ": entry '", z.name, "' has an extra field past its end");
    if (id == 1) {
      const unsigned char* p = extra + i + 4;
      const uint64_t want = 8 * (int(need_u) + int(need_c) + int(need_o));
      STRIDER_CHECK(len >= want, op, path, ": entry '", z.name, "' has a short Zip64 field (", len, " bytes, needs ",
                    want, ")");
      if (need_u) z.uncompressed_size = le(p, 8), p += 8;
      if (need_c) z.compressed_size = le(p, 8), p += 8;
      if (need_o) local = le(p, 8);
      return;
    }
    i += 4 + len;
  }
  STRIDER_CHECK(false, op, path, ": entry '", z.name, "' needs a Zip64 extra field and has none");
}

}  // namespace

std::vector<ZipEntry> read_zip_directory(const unsigned char* d, uint64_t size, const std::string& path, const char* op) {
  const Directory dir = find_directory(d, size, path, op);
  STRIDER_CHECK(dir.offset <= size && dir.size <= size - dir.offset, op, path, ": the zip central directory [",
                dir.offset, ", +", dir.size, ") lies outside the archive (", size, " bytes); truncated file?");
  STRIDER_CHECK(dir.entries <= dir.size / 46, op, path, ": the zip directory claims ", dir.entries,
                " entries in ", dir.size, " bytes");
  std::vector<ZipEntry> out;
  uint64_t at = dir.offset;
  const uint64_t end = dir.offset + dir.size;
  for (uint64_t k = 0; k < dir.entries; ++k) {
    STRIDER_CHECK(end - at >= 46 && le(d + at, 4) == kCentralSig, op, path, ": zip directory entry ", k,
                  " at byte ", at, " is malformed or truncated");
    const unsigned char* c = d + at;
    const uint64_t name_len = le(c + 28, 2), extra_len = le(c + 30, 2), comment_len = le(c + 32, 2);
    STRIDER_CHECK(46 + name_len + extra_len + comment_len <= end - at, op, path, ": zip directory entry ", k,
                  " runs past the directory");
    ZipEntry z;
    z.name.assign(reinterpret_cast<const char*>(c + 46), name_len);
    STRIDER_CHECK((le(c + 8, 2) & 1) == 0, op, path, ": entry '", z.name, "' is encrypted");
    z.method = static_cast<int>(le(c + 10, 2));
    z.crc32 = static_cast<uint32_t>(le(c + 16, 4));
    z.compressed_size = le(c + 20, 4);
    z.uncompressed_size = le(c + 24, 4);
    uint64_t local = le(c + 42, 4);
    apply_zip64(z, local, c + 46 + name_len, extra_len, path, op);
    STRIDER_CHECK(local <= size && size - local >= 30 && le(d + local, 4) == kLocalSig, op, path, ": entry '", z.name,
                  "' has no local header at byte ", local, " (the archive has ", size, " bytes)");
    const uint64_t local_name = le(d + local + 26, 2), local_extra = le(d + local + 28, 2);
    const uint64_t data_at = local + 30 + local_name + local_extra;
    STRIDER_CHECK(data_at <= size && local_name == name_len &&
                      std::equal(z.name.begin(), z.name.end(), d + local + 30),
                  op, path, ": entry '", z.name, "''s local header disagrees with the directory");
    STRIDER_CHECK(z.compressed_size <= size - data_at, op, path, ": entry '", z.name, "' claims ", z.compressed_size,
                  " bytes at byte ", data_at, " but the archive has ", size, "; truncated file?");
    z.data_offset = data_at;
    out.push_back(std::move(z));
    at += 46 + name_len + extra_len + comment_len;
  }
  return out;
}

uint32_t zip_crc32(const unsigned char* data, uint64_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n > 0) {  // zlib takes uInt lengths
    const uInt chunk = static_cast<uInt>(std::min<uint64_t>(n, 1u << 30));
    crc = crc32(crc, data, chunk);
    data += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace strider::io
