#include "checkpoint/shard_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "strider/autograd/grad_mode.h"
#include "strider/core/error.h"
#include "strider/io/crc32c.h"
#include "strider/io/file_io.h"

namespace strider::checkpoint::detail {
namespace {

constexpr const char* kOp = "checkpoint";
constexpr uint64_t kMaxDirectRead = uint64_t{256} << 20;  // whole blocks read straight into place per call

DimVector local_shape(const Piece& p) {
  DimVector s = p.global_shape;
  if (!s.empty()) s[0] = p.row_end - p.row_begin;
  return s;
}

}  // namespace

std::string rank_file_name(int rank, int world) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "rank-%05d-of-%05d.safetensors", rank, world);
  return buf;
}

ShardFileWriter::ShardFileWriter(const std::string& dir, const std::string& name, const std::vector<PieceLayout>& pieces,
                                 uint64_t block_bytes)
    : name_(name), block_bytes_(block_bytes) {
  std::vector<io::SafetensorsEntry> entries;
  io::Metadata metadata{{"format", "strider.checkpoint.shard"}};
  for (const PieceLayout& p : pieces) {
    entries.push_back({p.key, p.dtype, p.shape});
    metadata[rows_metadata_key(p.key)] = rows_metadata_value(p.row_begin, p.row_end);
  }
  writer_.emplace(dir + "/" + name, std::move(entries), metadata,
                  io::SafetensorsWriterOptions{.whole_file_checksum = false, .block_bytes = block_bytes});
}

WrittenFile ShardFileWriter::finish() {
  const io::WrittenSafetensors w = writer_->finish();
  return {FileRecord{name_, w.bytes, w.header_bytes, block_bytes_, w.block_crc32c}, w.offsets};
}

WrittenFile write_shard_file(const std::string& dir, const std::string& name, const std::vector<Piece>& pieces,
                             uint64_t block_bytes) {
  std::vector<PieceLayout> layout;
  for (const Piece& p : pieces) {
    layout.push_back({p.key, p.data.dtype(), local_shape(p), p.row_begin, p.row_end});
    STRIDER_INTERNAL_ASSERT(p.data.defined() && p.data.sizes() == IntArrayRef(layout.back().shape));
  }
  ShardFileWriter writer(dir, name, layout, block_bytes);
  for (const Piece& p : pieces) writer.write(p.data);
  return writer.finish();
}

VerifiedReader::VerifiedReader(std::string dir, const Manifest& manifest, bool every_file)
    : dir_(std::move(dir)), manifest_(manifest), shards_by_file_(shards_by_file(manifest)) {
  if (!every_file) return;
  // Before anything is read: every file the manifest lists is there, a regular file of its size,
  // whether or not this reader needs its bytes (a checkpoint missing a rank's file is not loaded,
  // resharded or exported in part). Each file's header is checked when it is first read.
  for (const FileRecord& f : manifest_.files) {
    const std::string path = dir_ + "/" + f.name;
    struct stat st {};
    STRIDER_CHECK(::stat(path.c_str(), &st) == 0, kOp, "cannot open ", path, " listed in the manifest: ",
                  std::strerror(errno), " (the checkpoint of ", manifest_.world_size, " ranks lacks this file; "
                  "restore it, or use another checkpoint)");
    STRIDER_CHECK(S_ISREG(st.st_mode), kOp, path, " is not a regular file (it is ", io::file_type_name(st.st_mode),
                  ")");
    STRIDER_CHECK(static_cast<uint64_t>(st.st_size) == f.bytes, kOp, path, " has ", st.st_size,
                  " bytes but the manifest lists ", f.bytes, ": the file is truncated or replaced");
  }
}

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
  STRIDER_INTERNAL_ASSERT(file >= 0 && static_cast<uint64_t>(file) < manifest_.files.size());
  const FileRecord& f = manifest_.files[static_cast<size_t>(file)];
  const std::string path = dir_ + "/" + f.name;
  // Non-blocking: opening a FIFO would otherwise wait for a writer; fstat refuses it next.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  STRIDER_CHECK(fd >= 0, kOp, "cannot open ", path, " listed in the manifest: ", std::strerror(errno));
  fds_[file] = fd;  // read() below finds it
  try {
    struct stat st {};
    STRIDER_CHECK(::fstat(fd, &st) == 0, kOp, "cannot stat ", path, ": ", std::strerror(errno));
    STRIDER_CHECK(S_ISREG(st.st_mode), kOp, path, " is not a regular file (it is ", io::file_type_name(st.st_mode),
                  ")");
    STRIDER_CHECK(static_cast<uint64_t>(st.st_size) == f.bytes, kOp, path, " has ", st.st_size,
                  " bytes but the manifest lists ", f.bytes, ": the file is truncated or replaced");
    // The header is read once: verified block by block, then compared with the manifest.
    std::string header(f.header_bytes, '\0');  // parse_manifest bounds header_bytes
    read(file, 0, f.header_bytes, header.data(), "its header");
    check_rank_file_header(path, f, shards_by_file_[static_cast<size_t>(file)], header);
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
             (last + 1 - block) * B < kMaxDirectRead)
        ++last;
      const uint64_t r1 = std::min((last + 1) * B, f.bytes);
      io::read_exact(fd, out + (b0 - offset), r1 - b0, b0, path, kOp);
      for (uint64_t k = block; k <= last; ++k) check_block(file, k, out + (k * B - offset), what);
      block = last + 1;
      continue;
    }
    // A block only partly inside the range (or a verification-only read): through scratch.
    scratch_.resize(B);
    io::read_exact(fd, scratch_.data(), b1 - b0, b0, path, kOp);
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
