#include "checkpoint/shard_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "strider/autograd/grad_mode.h"
#include "strider/core/error.h"
#include "strider/io/crc32c.h"
#include "strider/io/safetensors.h"

namespace strider::checkpoint::detail {
namespace {

constexpr const char* kOp = "checkpoint";
constexpr size_t kChunk = size_t{64} << 20;  // bytes per write() call

// CRC-32C of each block_bytes of a stream, fed in pieces of any size.
class BlockSums {
 public:
  explicit BlockSums(uint64_t block_bytes) : block_(block_bytes) {}
  void add(const char* p, size_t n) {
    while (n > 0) {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n, block_ - filled_));
      crc_ = io::crc32c(crc_, p, take);
      filled_ += take;
      p += take;
      n -= take;
      if (filled_ == block_) {
        sums_.push_back(crc_);
        crc_ = 0;
        filled_ = 0;
      }
    }
  }
  std::vector<uint32_t> finish() {
    if (filled_ > 0) sums_.push_back(crc_);
    return std::move(sums_);
  }

 private:
  uint64_t block_, filled_ = 0;
  uint32_t crc_ = 0;
  std::vector<uint32_t> sums_;
};

void write_all(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t put = ::write(fd, p, std::min(n, kChunk));
    if (put < 0 && errno == EINTR) continue;
    STRIDER_CHECK(put > 0, kOp, "writing ", path, " failed: ", put < 0 ? std::strerror(errno) : "no progress",
                  " (disk full?)");
    p += put;
    n -= static_cast<size_t>(put);
  }
}

void read_all(int fd, char* p, size_t n, uint64_t offset, const std::string& path) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, std::min(n, kChunk), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    STRIDER_CHECK(got > 0, kOp, path, ": read failed at byte ", offset, ": ",
                  got == 0 ? "unexpected end of file" : std::strerror(errno));
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
}

DimVector local_shape(const Piece& p) {
  DimVector s = p.global_shape;
  if (!s.empty()) s[0] = p.row_end - p.row_begin;
  return s;
}

}  // namespace

WrittenFile write_shard_file(const std::string& dir, const std::string& name, const std::vector<Piece>& pieces,
                             uint64_t block_bytes) {
  autograd::NoGradGuard no_grad;
  const std::string path = dir + "/" + name;
  WrittenFile out;
  // The header first: every piece's place is known from its shape.
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  std::vector<uint64_t> data_offsets;
  for (const Piece& p : pieces) {
    const DimVector shape = local_shape(p);
    STRIDER_INTERNAL_ASSERT(p.data.defined() && p.data.sizes() == IntArrayRef(shape));
    const uint64_t n = static_cast<uint64_t>(p.data.numel()) * element_size(p.data.dtype());
    header[p.key] = {{"dtype", io::safetensors_dtype_name(p.data.dtype())},
                     {"shape", std::vector<int64_t>(shape.begin(), shape.end())},
                     {"data_offsets", {offset, offset + n}}};
    data_offsets.push_back(offset);
    offset += n;
  }
  header["__metadata__"] = {{"format", "strider.checkpoint.shard"}};
  std::string h;
  try {
    h = header.dump();
  } catch (const nlohmann::json::exception& e) {
    STRIDER_CHECK(false, kOp, path, ": cannot encode the header: ", e.what());
  }
  while ((h.size() + 8) % 8) h.push_back(' ');
  char le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<char>(static_cast<uint64_t>(h.size()) >> (8 * i));
  out.record.name = name;
  out.record.header_bytes = 8 + h.size();
  out.record.block_bytes = block_bytes;
  for (uint64_t o : data_offsets) out.offsets.push_back(out.record.header_bytes + o);

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  STRIDER_CHECK(fd >= 0, kOp, "cannot write ", tmp, ": ", std::strerror(errno));
  try {
    BlockSums sums(block_bytes);
    auto put = [&](const char* p, size_t n) {
      for (size_t done = 0; done < n; done += kChunk) {  // checksum each chunk while it is in cache
        const size_t k = std::min(kChunk, n - done);
        sums.add(p + done, k);
        write_all(fd, p + done, k, tmp);
      }
    };
    put(le, 8);
    put(h.data(), h.size());
    for (const Piece& p : pieces) {
      const Tensor c = p.data.contiguous();  // row-major bytes, as safetensors stores them
      put(static_cast<const char*>(c.data()), static_cast<size_t>(c.numel()) * element_size(c.dtype()));
    }
    out.record.bytes = out.record.header_bytes + offset;
    out.record.blocks = sums.finish();
    STRIDER_CHECK(::fsync(fd) == 0, kOp, "writing ", tmp, " failed: ", std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    STRIDER_CHECK(false, kOp, "cannot move ", tmp, " to ", path, ": ", std::strerror(err));
  }
  return out;
}

VerifiedReader::VerifiedReader(std::string dir, const Manifest& manifest) : dir_(std::move(dir)), manifest_(manifest) {}

VerifiedReader::~VerifiedReader() {
  for (auto& [k, fd] : fds_) ::close(fd);
}

std::string VerifiedReader::block_contents(int64_t file, uint64_t begin, uint64_t end) const {
  const FileRecord& f = manifest_.files[static_cast<size_t>(file)];
  std::vector<std::string> parts;
  if (begin < f.header_bytes) parts.push_back("the header");
  for (const auto& [key, t] : manifest_.tensors)
    for (const ShardRecord& s : t.shards) {
      const uint64_t s1 = s.offset + static_cast<uint64_t>(s.row_end - s.row_begin) * t.row_bytes();
      if (s.file == file && s.offset < end && s1 > begin) parts.push_back("tensor '" + key + "'");
    }
  std::string out;
  for (size_t i = 0; i < parts.size() && i < 4; ++i) out += (i ? ", " : "") + parts[i];
  if (parts.size() > 4) out += " and " + std::to_string(parts.size() - 4) + " more";
  return out;
}

void VerifiedReader::check_block(int64_t file, uint64_t block, const char* data, const std::string& what) const {
  const FileRecord& f = manifest_.files[static_cast<size_t>(file)];
  const uint64_t begin = block * f.block_bytes, n = std::min(f.block_bytes, f.bytes - begin);
  const uint32_t crc = io::crc32c(0, data, n);
  STRIDER_CHECK(crc == f.blocks[block], kOp, dir_, "/", f.name, ": bytes [", begin, ", ", begin + n, ") (block ",
                block, ", holding ", block_contents(file, begin, begin + n), ") fail their checksum (stored ",
                io::crc32c_hex(f.blocks[block]), ", computed ", io::crc32c_hex(crc), ") while reading ", what,
                ": the file is corrupted; restore it or load an older checkpoint");
}

int VerifiedReader::open(int64_t file) {
  auto it = fds_.find(file);
  if (it != fds_.end()) return it->second;
  const FileRecord& f = manifest_.files[static_cast<size_t>(file)];
  const std::string path = dir_ + "/" + f.name;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  STRIDER_CHECK(fd >= 0, kOp, "cannot open ", path, " listed in the manifest: ", std::strerror(errno));
  fds_[file] = fd;  // read() below finds it
  try {
    struct stat st {};
    STRIDER_CHECK(::fstat(fd, &st) == 0 && S_ISREG(st.st_mode), kOp, path, " is not a regular file");
    STRIDER_CHECK(static_cast<uint64_t>(st.st_size) == f.bytes, kOp, path, " has ", st.st_size,
                  " bytes but the manifest lists ", f.bytes, ": the file is truncated or replaced");
    read(file, 0, f.header_bytes, nullptr, "its header");
  } catch (...) {
    fds_.erase(file);
    ::close(fd);
    throw;
  }
  return fd;
}

void VerifiedReader::read(int64_t file, uint64_t offset, uint64_t bytes, void* dst, const std::string& what) {
  const FileRecord& f = manifest_.files[static_cast<size_t>(file)];
  const std::string path = dir_ + "/" + f.name;
  const int fd = open(file);
  const uint64_t B = f.block_bytes, end = offset + bytes;
  char* out = static_cast<char*>(dst);
  uint64_t block = offset / B;
  while (block * B < end) {
    const uint64_t b0 = block * B, b1 = std::min(b0 + B, f.bytes);
    if (out && b0 >= offset && b1 <= end) {
      // Whole blocks inside the range: read them straight into the destination, then verify.
      uint64_t last = block;
      while ((last + 1) * B < end && std::min((last + 2) * B, f.bytes) <= end &&
             (last + 1 - block) * B < (uint64_t{256} << 20))
        ++last;
      const uint64_t r1 = std::min((last + 1) * B, f.bytes);
      read_all(fd, out + (b0 - offset), r1 - b0, b0, path);
      for (uint64_t k = block; k <= last; ++k) check_block(file, k, out + (k * B - offset), what);
      block = last + 1;
      continue;
    }
    // A block only partly inside the range (or a verification-only read): through scratch.
    scratch_.resize(B);
    read_all(fd, scratch_.data(), b1 - b0, b0, path);
    check_block(file, block, scratch_.data(), what);
    if (out) {
      const uint64_t c0 = std::max(b0, offset), c1 = std::min(b1, end);
      std::memcpy(out + (c0 - offset), scratch_.data() + (c0 - b0), c1 - c0);
    }
    ++block;
  }
}

void VerifiedReader::verify_all(int64_t file) {
  open(file);
  const FileRecord& f = manifest_.files[static_cast<size_t>(file)];
  read(file, 0, f.bytes, nullptr, "the whole file");
}

}  // namespace strider::checkpoint::detail
