#include "strider/io/safetensors.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "strider/autograd/functions.h"
#include "strider/autograd/grad_mode.h"
#include "strider/ops/factory.h"

namespace strider::io {
namespace {

constexpr const char* kChecksumKey = "strider.checksum";  // CRC-32 of the whole file, 8 hex digits
constexpr const char* kLegacyCrcKey = "strider.crc32";    // older strider files: CRC-32 of the data only
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;        // the safetensors format's own limit
constexpr const char* kOp = "load_safetensors";

const char* dtype_name(ScalarType t) {
  switch (t) {
    case kFloat: return "F32";
    case kDouble: return "F64";
    case kBFloat16: return "BF16";
    case kHalf: return "F16";
    case kLong: return "I64";
    case kInt: return "I32";
    case kByte: return "U8";
    case kBool: return "BOOL";
  }
  return "?";
}

// The raw header text `"strider.checksum":"XXXXXXXX"`: the checksum covers the file with these
// eight digits as '0'.
std::string checksum_field(const std::string& digits) { return std::string("\"") + kChecksumKey + "\":\"" + digits + "\""; }

uLong crc_update(uLong crc, const void* data, size_t n) {
  const auto* p = static_cast<const Bytef*>(data);
  while (n > 0) {  // zlib takes uInt lengths
    const uInt chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    crc = crc32(crc, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return crc;
}

std::string hex8(uLong v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08lx", v & 0xffffffffUL);
  return buf;
}

class File {
 public:
  File(const std::string& path, int flags, mode_t mode = 0) : fd_(::open(path.c_str(), flags | O_CLOEXEC, mode)) {}
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  int fd() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

void read_exact(int fd, void* dst, size_t n, uint64_t offset, const std::string& path) {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, std::min<size_t>(n, 1u << 30), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    STRIDER_CHECK(got > 0, kOp, path, ": read failed at byte ", offset, ": ",
                  got == 0 ? "unexpected end of file" : std::strerror(errno));
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
}

bool write_all(int fd, const void* src, size_t n) {
  const auto* p = static_cast<const char*>(src);
  while (n > 0) {
    const ssize_t put = ::write(fd, p, std::min<size_t>(n, 1u << 30));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put;
    n -= static_cast<size_t>(put);
  }
  return true;
}

// Removes `<name>.tmp.<pid>` files next to `path` left by writers that no longer run (killed
// mid-save); a temporary of a live process is left alone.
void remove_stale_temporaries(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string prefix = p.filename().string() + ".tmp.";
  const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : ".";
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) std::filesystem::remove(it->path(), ec);
  }
}

void fsync_directory_of(const std::string& path) {
  const std::filesystem::path p(path);
  File dir(p.has_parent_path() ? p.parent_path().string() : ".", O_RDONLY | O_DIRECTORY);
  if (dir.fd() >= 0) ::fsync(dir.fd());
}

struct Entry {
  std::string name;
  ScalarType dtype;
  DimVector shape;
  uint64_t begin, end;
};

ScalarType parse_dtype(const nlohmann::json& v, const std::string& where) {
  STRIDER_CHECK(v.is_string(), kOp, where, ": 'dtype' must be a string, got ", v.type_name());
  const std::string s = v.get<std::string>();
  for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf, kLong, kInt, kByte, kBool})
    if (s == dtype_name(t)) return t;
  STRIDER_CHECK(false, kOp, where, ": unsupported dtype '", s, "' (strider reads F32, F64, BF16, F16, I64, I32, U8, BOOL)");
  return kFloat;
}

Entry parse_entry(const std::string& name, const nlohmann::json& e, const std::string& path) {
  const std::string where = path + ": tensor '" + name + "'";
  STRIDER_CHECK(e.is_object(), kOp, where, " must be a JSON object, got ", e.type_name());
  for (auto& [k, v] : e.items())
    STRIDER_CHECK(k == "dtype" || k == "shape" || k == "data_offsets", kOp, where, " has an unknown field '", k, "'");
  STRIDER_CHECK(e.contains("dtype") && e.contains("shape") && e.contains("data_offsets"), kOp, where,
                " needs 'dtype', 'shape' and 'data_offsets'");
  Entry out{name, parse_dtype(e["dtype"], where), {}, 0, 0};
  const nlohmann::json& shape = e["shape"];
  STRIDER_CHECK(shape.is_array(), kOp, where, ": 'shape' must be an array, got ", shape.type_name());
  for (const nlohmann::json& d : shape) {
    STRIDER_CHECK(d.is_number_integer() && (d.is_number_unsigned() ? d.get<uint64_t>() <= uint64_t{INT64_MAX}
                                                                       : d.get<int64_t>() >= 0),
                  kOp, where, ": shape entries must be non-negative integers, got ", d.dump());
    out.shape.push_back(d.get<int64_t>());
  }
  const nlohmann::json& off = e["data_offsets"];
  STRIDER_CHECK(off.is_array() && off.size() == 2 && off[0].is_number_unsigned() && off[1].is_number_unsigned(), kOp,
                where, ": 'data_offsets' must be two non-negative integers, got ", off.dump());
  out.begin = off[0].get<uint64_t>();
  out.end = off[1].get<uint64_t>();
  // Element and byte counts that do not overflow (checked_numel throws naming the shape).
  int64_t numel = 0;
  try {
    numel = checked_numel(out.shape, kOp);
  } catch (const Error& e) {
    STRIDER_CHECK(false, kOp, where, ": ", e.what());
  }
  uint64_t bytes = 0;
  STRIDER_CHECK(!__builtin_mul_overflow(static_cast<uint64_t>(numel), element_size(out.dtype), &bytes), kOp, where,
                ": shape ", IntArrayRef(out.shape), " of ", out.dtype, " is too large");
  STRIDER_CHECK(out.begin <= out.end && out.end - out.begin == bytes, kOp, where, ": data_offsets [", out.begin, ", ",
                out.end, ") hold ", out.end - out.begin, " bytes but shape ", IntArrayRef(out.shape), " of ",
                out.dtype, " needs ", bytes);
  return out;
}

}  // namespace

const char* safetensors_dtype_name(ScalarType dtype) { return dtype_name(dtype); }

void save_safetensors(const std::string& path, const TensorMap& tensors, const Metadata& metadata) {
  autograd::NoGradGuard g;
  nlohmann::json header = nlohmann::json::object();
  std::vector<Tensor> blobs;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    STRIDER_CHECK(name != "__metadata__", "save_safetensors", "a tensor cannot be named '__metadata__'");
    STRIDER_CHECK(t.defined(), "save_safetensors", "tensor '", name, "' is undefined");
    Tensor c = t.detach().contiguous();
    blobs.push_back(c);
    const uint64_t n = c.nbytes();
    header[name] = {{"dtype", dtype_name(c.dtype())},
                    {"shape", std::vector<int64_t>(c.sizes().begin(), c.sizes().end())},
                    {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  nlohmann::json meta = nlohmann::json::object();
  for (const auto& [k, v] : metadata)
    if (k != kChecksumKey && k != kLegacyCrcKey) meta[k] = v;
  meta[kChecksumKey] = "00000000";
  header["__metadata__"] = meta;
  std::string h;
  try {
    h = header.dump();
  } catch (const nlohmann::json::exception& e) {  // names or metadata that are not UTF-8
    STRIDER_CHECK(false, "save_safetensors", path, ": cannot encode the header: ", e.what());
  }
  while ((h.size() + 8) % 8) h.push_back(' ');  // align the data section
  unsigned char le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(static_cast<uint64_t>(h.size()) >> (8 * i));
  uLong crc = crc_update(crc_update(crc32(0L, Z_NULL, 0), le, 8), h.data(), h.size());
  for (const Tensor& b : blobs) crc = crc_update(crc, b.data(), b.nbytes());
  const size_t field = h.find(checksum_field("00000000"));
  STRIDER_INTERNAL_ASSERT(field != std::string::npos);
  h.replace(field, checksum_field("00000000").size(), checksum_field(hex8(crc)));

  remove_stale_temporaries(path);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    File f(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    STRIDER_CHECK(f.fd() >= 0, "save_safetensors", "cannot write ", tmp, ": ", std::strerror(errno));
    bool ok = write_all(f.fd(), le, 8) && write_all(f.fd(), h.data(), h.size());
    for (const Tensor& b : blobs) ok = ok && write_all(f.fd(), b.data(), b.nbytes());
    const int err = errno;
    ok = ok && ::fsync(f.fd()) == 0;
    if (!ok) ::unlink(tmp.c_str());
    STRIDER_CHECK(ok, "save_safetensors", "writing ", path, " failed: ", std::strerror(err ? err : errno),
                  " (disk full?)");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    STRIDER_CHECK(false, "save_safetensors", "cannot move ", tmp, " to ", path, ": ", std::strerror(err));
  }
  fsync_directory_of(path);
}

SafetensorsFile load_safetensors(const std::string& path, const SafetensorsLoadOptions& options) {
  File f(path, O_RDONLY);
  STRIDER_CHECK(f.fd() >= 0, kOp, "cannot open ", path, ": ", std::strerror(errno));
  struct stat st {};
  STRIDER_CHECK(::fstat(f.fd(), &st) == 0, kOp, "cannot stat ", path, ": ", std::strerror(errno));
  STRIDER_CHECK(S_ISREG(st.st_mode), kOp, path, " is not a regular file",
                S_ISDIR(st.st_mode) ? " (it is a directory)" : "");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  STRIDER_CHECK(file_size >= 8, kOp, path, " has ", file_size, " bytes: too short to be a safetensors file");
  unsigned char le[8];
  read_exact(f.fd(), le, 8, 0, path);
  uint64_t len = 0;
  for (int i = 0; i < 8; ++i) len |= uint64_t{le[i]} << (8 * i);
  STRIDER_CHECK(len <= file_size - 8 && len <= kMaxHeaderBytes, kOp, path, ": header length ", len,
                " exceeds the file (", file_size, " bytes) or the format's 100 MiB limit; not a safetensors file");
  std::string h(len, '\0');
  read_exact(f.fd(), h.data(), len, 8, path);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(h);
  } catch (const nlohmann::json::exception& e) {
    STRIDER_CHECK(false, kOp, path, ": the header is not valid JSON: ", e.what());
  }
  STRIDER_CHECK(header.is_object(), kOp, path, ": the header must be a JSON object, got ", header.type_name());

  SafetensorsFile out;
  std::string stored_checksum, legacy_crc;
  std::vector<Entry> entries;
  for (auto& [name, value] : header.items()) {
    if (name != "__metadata__") {
      entries.push_back(parse_entry(name, value, path));
      continue;
    }
    STRIDER_CHECK(value.is_object(), kOp, path, ": '__metadata__' must be an object, got ", value.type_name());
    for (auto& [k, v] : value.items()) {
      STRIDER_CHECK(v.is_string(), kOp, path, ": metadata '", k, "' must be a string, got ", v.type_name());
      if (k == kChecksumKey) stored_checksum = v.get<std::string>();
      else if (k == kLegacyCrcKey) legacy_crc = v.get<std::string>();
      else out.metadata[k] = v.get<std::string>();
    }
  }
  // The data section must be covered exactly: no overlapping tensors, no unread gaps.
  const uint64_t data_size = file_size - 8 - len;
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t covered = 0;
  for (const Entry* e : by_offset) {
    STRIDER_CHECK(e->begin == covered, kOp, path, ": tensor '", e->name, "' starts at data byte ", e->begin,
                  " but the previous tensor ends at ", covered, e->begin < covered ? " (they overlap)" : " (a gap)");
    covered = e->end;
  }
  STRIDER_CHECK(covered == data_size, kOp, path, ": the tensors cover ", covered, " bytes but the data section has ",
                data_size, covered < data_size ? " (trailing bytes)" : " (truncated file)");

  size_t field = std::string::npos;
  if (!stored_checksum.empty()) {
    STRIDER_CHECK(stored_checksum.size() == 8 && stored_checksum.find_first_not_of("0123456789abcdef") == std::string::npos,
                  kOp, path, ": malformed '", kChecksumKey, "' value '", stored_checksum, "'");
    field = h.find(checksum_field(stored_checksum));
    STRIDER_CHECK(field != std::string::npos && h.find(checksum_field(stored_checksum), field + 1) == std::string::npos,
                  kOp, path, ": the header's '", kChecksumKey, "' field is not in strider's form");
  }
  STRIDER_CHECK(!options.require_checksum || field != std::string::npos, kOp, path,
                " carries no strider checksum (it was written by another tool or an older strider), so its "
                "integrity cannot be verified; training state is only resumed from checksummed files");

  // Everything is consistent: allocate (at most the file's size in total) and read.
  uLong crc = crc32(0L, Z_NULL, 0);
  uLong data_crc = crc32(0L, Z_NULL, 0);
  if (field != std::string::npos) {
    std::string zeroed = h;
    zeroed.replace(field, checksum_field(stored_checksum).size(), checksum_field("00000000"));
    crc = crc_update(crc_update(crc, le, 8), zeroed.data(), zeroed.size());
  }
  for (const Entry* e : by_offset) {
    Tensor t = empty(e->shape, e->dtype);
    read_exact(f.fd(), t.data(), t.nbytes(), 8 + len + e->begin, path);
    crc = crc_update(crc, t.data(), t.nbytes());
    data_crc = crc_update(data_crc, t.data(), t.nbytes());
    out.tensors[e->name] = t;
  }
  if (field != std::string::npos) {
    STRIDER_CHECK(hex8(crc) == stored_checksum, kOp, path, ": checksum mismatch (the file is corrupted): stored ",
                  stored_checksum, ", computed ", hex8(crc));
    out.checksummed = true;
  } else if (!legacy_crc.empty()) {
    STRIDER_CHECK(std::to_string(data_crc) == legacy_crc, kOp, path,
                  ": data checksum mismatch (the file is corrupted): stored ", legacy_crc, ", computed ", data_crc);
  }
  return out;
}

}  // namespace strider::io
