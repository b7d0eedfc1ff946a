#include "strider/io/safetensors_writer.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "strider/autograd/grad_mode.h"
#include "strider/core/error.h"
#include "strider/io/crc32c.h"

namespace strider::io {
namespace {

constexpr const char* kOp = "safetensors writer";
constexpr size_t kChunk = size_t{4} << 20;  // checksummed while still in cache, then written

std::string checksum_field(const std::string& digits) {
  return std::string("\"") + kSafetensorsChecksumKey + "\":\"" + digits + "\"";
}

unsigned long crc32_update(unsigned long crc, const char* p, size_t n) {
  while (n > 0) {  // zlib takes uInt lengths
    const uInt k = static_cast<uInt>(std::min<size_t>(n, size_t{1} << 30));
    crc = ::crc32(crc, reinterpret_cast<const Bytef*>(p), k);
    p += k;
    n -= k;
  }
  return crc;
}

}  // namespace

SafetensorsWriter::SafetensorsWriter(std::string path, std::vector<SafetensorsEntry> entries, const Metadata& metadata,
                                     SafetensorsWriterOptions options)
    : path_(std::move(path)), tmp_(temporary_path(path_)), options_(options) {
  STRIDER_CHECK(options_.block_bytes == 0 || options_.block_bytes >= 8, kOp, path_, ": block_bytes ",
                options_.block_bytes, " is too small");
  // The whole-file checksum is patched into the header last, which would change the first block.
  STRIDER_CHECK(!(options_.whole_file_checksum && options_.block_bytes), kOp, path_,
                ": a whole-file checksum and block checksums exclude each other");
  nlohmann::json header = nlohmann::json::object();
  std::vector<uint64_t> data_offsets;
  for (const SafetensorsEntry& e : entries) {
    STRIDER_CHECK(e.name != "__metadata__", kOp, path_, ": a tensor cannot be named '__metadata__'");
    STRIDER_CHECK(!header.contains(e.name), kOp, path_, ": tensor '", e.name, "' is listed twice");
    const uint64_t numel = static_cast<uint64_t>(checked_numel(e.shape, kOp));
    uint64_t n = 0, end = 0;
    STRIDER_CHECK(!__builtin_mul_overflow(numel, element_size(e.dtype), &n) &&
                      !__builtin_add_overflow(data_bytes_, n, &end),
                  kOp, path_, ": tensor '", e.name, "' ", IntArrayRef(e.shape), " makes the file too large");
    header[e.name] = {{"dtype", safetensors_dtype_name(e.dtype)},
                      {"shape", std::vector<int64_t>(e.shape.begin(), e.shape.end())},
                      {"data_offsets", {data_bytes_, end}}};
    data_offsets.push_back(data_bytes_);
    data_bytes_ = end;
  }
  nlohmann::json meta = nlohmann::json::object();
  for (const auto& [k, v] : metadata)
    if (k != kSafetensorsChecksumKey) meta[k] = v;
  if (options_.whole_file_checksum) meta[kSafetensorsChecksumKey] = "00000000";
  if (!meta.empty()) header["__metadata__"] = meta;
  std::string h;
  try {
    h = header.dump();
  } catch (const nlohmann::json::exception& e) {  // names or metadata that are not UTF-8
    STRIDER_CHECK(false, kOp, path_, ": cannot encode the header: ", e.what());
  }
  while ((h.size() + 8) % 8) h.push_back(' ');  // align the data section
  if (options_.whole_file_checksum) {
    const size_t field = h.find(checksum_field("00000000"));
    STRIDER_INTERNAL_ASSERT(field != std::string::npos);
    checksum_at_ = 8 + field + checksum_field("").size() - 1;  // the digits, between the quotes
  }
  out_.header_bytes = 8 + h.size();
  out_.bytes = out_.header_bytes + data_bytes_;
  for (uint64_t o : data_offsets) out_.offsets.push_back(out_.header_bytes + o);

  remove_stale_temporaries(path_);
  file_ = File(tmp_, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  STRIDER_CHECK(file_.is_open(), kOp, "cannot write ", tmp_, ": ", std::strerror(errno));
  crc32_ = ::crc32(0L, Z_NULL, 0);
  char le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<char>(static_cast<uint64_t>(h.size()) >> (8 * i));
  absorb(le, 8);
  absorb(h.data(), h.size());
}

SafetensorsWriter::~SafetensorsWriter() {
  if (finished_) return;
  file_.close();
  ::unlink(tmp_.c_str());
}

void SafetensorsWriter::absorb(const char* p, size_t n) {
  while (n > 0) {
    const size_t k = std::min(n, kChunk);
    if (options_.whole_file_checksum) crc32_ = crc32_update(crc32_, p, k);
    for (size_t done = 0; options_.block_bytes && done < k;) {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(k - done, options_.block_bytes - block_filled_));
      block_crc_ = crc32c(block_crc_, p + done, take);
      done += take;
      block_filled_ += take;
      if (block_filled_ == options_.block_bytes) {
        out_.block_crc32c.push_back(block_crc_);
        block_crc_ = 0;
        block_filled_ = 0;
      }
    }
    write_exact(file_.fd(), p, k, tmp_, kOp);
    p += k;
    n -= k;
  }
}

void SafetensorsWriter::write(const void* bytes, size_t n) {
  STRIDER_CHECK(!finished_, kOp, path_, ": write after finish");
  STRIDER_CHECK(n <= data_bytes_ - written_, kOp, path_, ": ", n, " more bytes than the header's ", data_bytes_);
  absorb(static_cast<const char*>(bytes), n);
  written_ += n;
}

void SafetensorsWriter::write(const Tensor& t) {
  autograd::NoGradGuard no_grad;
  const Tensor c = t.contiguous();  // row-major bytes, as safetensors stores them
  write(c.data(), c.nbytes());
}

WrittenSafetensors SafetensorsWriter::finish() {
  STRIDER_CHECK(!finished_, kOp, path_, ": finished twice");
  STRIDER_CHECK(written_ == data_bytes_, kOp, path_, ": ", written_, " bytes of data written but the header lists ",
                data_bytes_);
  if (options_.block_bytes && block_filled_ > 0) out_.block_crc32c.push_back(block_crc_);
  if (checksum_at_) {
    char digits[9];
    std::snprintf(digits, sizeof digits, "%08lx", crc32_ & 0xffffffffUL);
    const ssize_t put = ::pwrite(file_.fd(), digits, 8, static_cast<off_t>(checksum_at_));
    STRIDER_CHECK(put == 8, kOp, "writing ", tmp_, " failed: ", std::strerror(errno));
  }
  STRIDER_CHECK(::fsync(file_.fd()) == 0, kOp, "writing ", tmp_, " failed: ", std::strerror(errno), " (disk full?)");
  file_.close();
  STRIDER_CHECK(::rename(tmp_.c_str(), path_.c_str()) == 0, kOp, "cannot move ", tmp_, " to ", path_, ": ",
                std::strerror(errno));
  finished_ = true;
  fsync_directory(parent_directory(path_));
  return out_;
}

}  // namespace strider::io
