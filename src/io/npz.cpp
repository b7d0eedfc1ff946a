// .npz: a zip archive of .npy entries (numpy.savez stores them, savez_compressed deflates them).
#include <zlib.h>

#include <algorithm>
#include <memory>

#include "io/mapped_file.h"
#include "io/npy_decode.h"
#include "io/zip_archive.h"
#include "strider/io/npy.h"

namespace strider::io {
namespace {

constexpr const char* kOp = "load_npz";

// Inflates a raw deflate stream into exactly `out_size` bytes.
std::shared_ptr<unsigned char[]> inflate_entry(const unsigned char* src, const ZipEntry& z, const std::string& where) {
  // Deflate cannot expand by more than about 1032:1; a larger claim is a lie, not a big array.
  STRIDER_CHECK(z.uncompressed_size / 1032 <= z.compressed_size + 1, kOp, where, ": claims ", z.uncompressed_size,
                " bytes from ", z.compressed_size, " compressed, beyond deflate's ratio; corrupt archive");
  std::shared_ptr<unsigned char[]> out(new unsigned char[std::max<uint64_t>(z.uncompressed_size, 1)]);
  z_stream s{};
  STRIDER_CHECK(inflateInit2(&s, -MAX_WBITS) == Z_OK, kOp, where, ": zlib inflateInit2 failed");
  uint64_t in_left = z.compressed_size, out_left = z.uncompressed_size;
  s.next_in = const_cast<unsigned char*>(src);
  s.next_out = out.get();
  int rc = Z_OK;
  while (rc == Z_OK) {
    const uInt in_chunk = static_cast<uInt>(std::min<uint64_t>(in_left, 1u << 30));
    const uInt out_chunk = static_cast<uInt>(std::min<uint64_t>(out_left, 1u << 30));
    s.avail_in = in_chunk;
    s.avail_out = out_chunk;
    rc = inflate(&s, Z_NO_FLUSH);
    in_left -= in_chunk - s.avail_in;
    out_left -= out_chunk - s.avail_out;
    if (rc == Z_OK && in_chunk == s.avail_in && out_chunk == s.avail_out) rc = Z_BUF_ERROR;  // no progress
  }
  const std::string msg = s.msg ? s.msg : "";
  inflateEnd(&s);
  STRIDER_CHECK(rc == Z_STREAM_END && out_left == 0, kOp, where, ": the deflated data is corrupt or truncated (",
                rc == Z_STREAM_END ? "wrong size" : msg.empty() ? "zlib error " + std::to_string(rc) : msg, ")");
  return out;
}

}  // namespace

std::map<std::string, Tensor> load_npz(const std::string& path) {
  std::shared_ptr<const MappedFile> file = MappedFile::open(path, kOp, MappedFile::Access::Read);
  std::map<std::string, Tensor> out;
  for (const ZipEntry& z : read_zip_directory(file->data(), file->size(), path, kOp)) {
    const std::string where = path + ": entry '" + z.name + "'";
    STRIDER_CHECK(z.name.size() > 4 && z.name.compare(z.name.size() - 4, 4, ".npy") == 0, kOp, where,
                  " is not a .npy array (numpy.savez names entries <key>.npy)");
    const std::string key = z.name.substr(0, z.name.size() - 4);
    STRIDER_CHECK(!out.count(key), kOp, where, " repeats the key '", key, "'");
    unsigned char* src = file->data() + z.data_offset;
    std::shared_ptr<const void> owner = file;
    unsigned char* bytes = src;
    if (z.method == 0) {
      STRIDER_CHECK(z.compressed_size == z.uncompressed_size, kOp, where, ": stored entry sizes disagree (",
                    z.compressed_size, " vs ", z.uncompressed_size, ")");
    } else {
      STRIDER_CHECK(z.method == 8, kOp, where, ": compression method ", z.method,
                    " is not supported (stored and deflated are; numpy writes those)");
      std::shared_ptr<unsigned char[]> inflated = inflate_entry(src, z, where);
      bytes = inflated.get();
      owner = std::move(inflated);
    }
    const uint32_t crc = zip_crc32(bytes, z.uncompressed_size);
    STRIDER_CHECK(crc == z.crc32, kOp, where, ": CRC-32 ", crc, " does not match the archive's ", z.crc32,
                  "; the archive is corrupt");
    Tensor t = decode_npy(std::move(owner), bytes, z.uncompressed_size, where, kOp);
    // A stored entry's tensor may view the archive's bytes: copied out, so keeping one array does
    // not keep the whole archive in memory (np.load copies each array too).
    const auto* at = static_cast<const unsigned char*>(t.storage()->address());
    if (at >= file->data() && at < file->data() + file->size()) t = t.clone();
    out.emplace(key, std::move(t));
  }
  return out;
}

}  // namespace strider::io
