#include "strider/io/safetensors.h"

#include <fcntl.h>
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
#include "strider/io/file_io.h"
#include "strider/io/safetensors_writer.h"
#include "strider/ops/factory.h"

namespace strider::io {
namespace {

constexpr const char* kChecksumKey = kSafetensorsChecksumKey;  // CRC-32 of the whole file, 8 hex digits
constexpr const char* kLegacyCrcKey = "strider.crc32";    // older strider files: CRC-32 of the data only
constexpr uint64_t kMaxHeaderBytes = kSafetensorsMaxHeaderBytes;
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

using Entry = SafetensorsHeaderEntry;

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
    STRIDER_CHECK(false, kOp, where, ": ", message_without_op(e));
  }
  uint64_t bytes = 0;
  STRIDER_CHECK(!__builtin_mul_overflow(static_cast<uint64_t>(numel), element_size(out.dtype), &bytes), kOp, where,
                ": shape ", IntArrayRef(out.shape), " of ", out.dtype, " is too large");
  STRIDER_CHECK(out.begin <= out.end, kOp, where, ": data_offsets [", out.begin, ", ", out.end,
                ") end before they start; the header is corrupt");
  STRIDER_CHECK(out.end - out.begin == bytes, kOp, where, ": data_offsets [", out.begin, ", ", out.end, ") hold ",
                out.end - out.begin, " bytes but shape ", IntArrayRef(out.shape), " of ", out.dtype, " needs ", bytes);
  return out;
}

}  // namespace

const char* safetensors_dtype_name(ScalarType dtype) { return dtype_name(dtype); }

SafetensorsHeader parse_safetensors_header(const std::string& json, const std::string& path) {
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    STRIDER_CHECK(false, kOp, path, ": the header is not valid JSON: ", e.what());
  }
  STRIDER_CHECK(header.is_object(), kOp, path, ": the header must be a JSON object, got ", header.type_name());
  SafetensorsHeader out;
  for (auto& [name, value] : header.items()) {
    if (name != "__metadata__") {
      out.entries.push_back(parse_entry(name, value, path));
      continue;
    }
    STRIDER_CHECK(value.is_object(), kOp, path, ": '__metadata__' must be an object, got ", value.type_name());
    for (auto& [k, v] : value.items()) {
      STRIDER_CHECK(v.is_string(), kOp, path, ": metadata '", k, "' must be a string, got ", v.type_name());
      out.metadata[k] = v.get<std::string>();
    }
  }
  return out;
}

void save_safetensors(const std::string& path, const TensorMap& tensors, const Metadata& metadata) {
  std::vector<SafetensorsEntry> entries;
  for (const auto& [name, t] : tensors) {
    STRIDER_CHECK(t.defined(), "save_safetensors", "tensor '", name, "' is undefined");
    entries.push_back({name, t.dtype(), t.sizes().vec()});
  }
  Metadata meta = metadata;
  meta.erase(kLegacyCrcKey);
  SafetensorsWriter writer(path, std::move(entries), meta);
  for (const auto& [name, t] : tensors) writer.write(t);
  writer.finish();
}

SafetensorsFile load_safetensors(const std::string& path, const SafetensorsLoadOptions& options) {
  File f(path, O_RDONLY | O_NONBLOCK);  // a FIFO would block this open until a writer came; fstat refuses it
  STRIDER_CHECK(f.fd() >= 0, kOp, "cannot open ", path, ": ", std::strerror(errno));
  struct stat st {};
  STRIDER_CHECK(::fstat(f.fd(), &st) == 0, kOp, "cannot stat ", path, ": ", std::strerror(errno));
  STRIDER_CHECK(S_ISREG(st.st_mode), kOp, path, " is not a regular file (it is ", file_type_name(st.st_mode), ")");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  STRIDER_CHECK(file_size >= 8, kOp, path, " has ", file_size, " bytes: too short to be a safetensors file");
  unsigned char le[8];
  read_exact(f.fd(), le, 8, 0, path, kOp);
  uint64_t len = 0;
  for (int i = 0; i < 8; ++i) len |= uint64_t{le[i]} << (8 * i);
  if (len > file_size - 8 || len > kMaxHeaderBytes) {
    // torch.save writes a zip archive (PK\3\4) since PyTorch 1.6, a pickle (0x80, protocol) before.
    const bool zip = le[0] == 'P' && le[1] == 'K' && le[2] == 3 && le[3] == 4, pickle = le[0] == 0x80 && le[1] <= 5;
    STRIDER_CHECK(!zip && !pickle, kOp, path, " is ", zip ? "a zip archive" : "a Python pickle",
                  ", as torch.save writes (a PyTorch .pt or .pth file?), not a safetensors file; strider does not "
                  "read PyTorch's pickled files. Convert it once in Python: safetensors.torch.save_file(torch.load(",
                  "'", path, "'), 'model.safetensors') (docs/from_pytorch.md, Checkpoints)");
    STRIDER_CHECK(false, kOp, path, ": header length ", len, " exceeds the file (", file_size,
                  " bytes) or the format's 100 MiB limit; not a safetensors file");
  }
  std::string h(len, '\0');
  read_exact(f.fd(), h.data(), len, 8, path, kOp);
  SafetensorsHeader header = parse_safetensors_header(h, path);

  SafetensorsFile out;
  std::string stored_checksum, legacy_crc;
  const std::vector<Entry>& entries = header.entries;
  for (auto& [k, v] : header.metadata) {
    if (k == kChecksumKey) stored_checksum = v;
    else if (k == kLegacyCrcKey) legacy_crc = v;
    else out.metadata[k] = v;
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
    read_exact(f.fd(), t.data(), t.nbytes(), 8 + len + e->begin, path, kOp);
    crc = crc_update(crc, t.data(), t.nbytes());
    data_crc = crc_update(data_crc, t.data(), t.nbytes());
    if (e->dtype == kBool) {  // any other byte would be a bool that is neither (sum 8, not-true false)
      const auto* b = static_cast<const unsigned char*>(t.data());
      for (int64_t i = 0; i < t.numel(); ++i)
        STRIDER_CHECK(b[i] <= 1, kOp, path, ": tensor '", e->name, "' (BOOL) element ", i, " has byte value ",
                      int(b[i]), "; a bool is stored as 0 or 1");
    }
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
