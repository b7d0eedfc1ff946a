#include "strider/io/safetensors.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "strider/autograd/functions.h"
#include "strider/autograd/grad_mode.h"
#include "strider/ops/factory.h"

namespace strider::io {
namespace {

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

ScalarType dtype_of(const std::string& s, const std::string& path) {
  for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf, kLong, kInt, kByte, kBool})
    if (s == dtype_name(t)) return t;
  STRIDER_CHECK(false, "load_safetensors", path, ": unsupported dtype '", s, "'");
  return kFloat;
}

constexpr const char* kCrcKey = "strider.crc32";

}  // namespace

void save_safetensors(const std::string& path, const TensorMap& tensors, const Metadata& metadata) {
  autograd::NoGradGuard g;
  nlohmann::json header = nlohmann::json::object();
  std::vector<Tensor> blobs;
  uint64_t offset = 0;
  uLong crc = crc32(0L, Z_NULL, 0);
  for (const auto& [name, t] : tensors) {
    STRIDER_CHECK(t.defined(), "save_safetensors", "tensor '", name, "' is undefined");
    Tensor c = t.detach().contiguous();
    blobs.push_back(c);
    const uint64_t n = c.nbytes();
    header[name] = {{"dtype", dtype_name(c.dtype())},
                    {"shape", std::vector<int64_t>(c.sizes().begin(), c.sizes().end())},
                    {"data_offsets", {offset, offset + n}}};
    crc = crc32(crc, static_cast<const Bytef*>(c.data()), static_cast<uInt>(n));
    offset += n;
  }
  nlohmann::json meta = nlohmann::json::object();
  for (const auto& [k, v] : metadata) meta[k] = v;
  meta[kCrcKey] = std::to_string(crc);
  header["__metadata__"] = meta;
  std::string h = header.dump();
  while ((h.size() + 8) % 8) h.push_back(' ');  // align the data section
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    STRIDER_CHECK(f != nullptr, "save_safetensors", "cannot write ", tmp, ": ", std::strerror(errno));
    uint64_t len = h.size();
    unsigned char le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(len >> (8 * i));
    bool ok = std::fwrite(le, 1, 8, f) == 8 && std::fwrite(h.data(), 1, h.size(), f) == h.size();
    for (const Tensor& b : blobs) ok = ok && std::fwrite(b.data(), 1, b.nbytes(), f) == b.nbytes();
    ok = ok && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
    std::fclose(f);
    if (!ok) std::remove(tmp.c_str());
    STRIDER_CHECK(ok, "save_safetensors", "writing ", path, " failed (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  STRIDER_CHECK(!ec, "save_safetensors", "cannot move ", tmp, " to ", path, ": ", ec.message());
}

SafetensorsFile load_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  STRIDER_CHECK(in.good(), "load_safetensors", "cannot open ", path);
  in.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  STRIDER_CHECK(file_size >= 8, "load_safetensors", path, " is too short to be a safetensors file");
  unsigned char le[8];
  in.read(reinterpret_cast<char*>(le), 8);
  uint64_t len = 0;
  for (int i = 0; i < 8; ++i) len |= uint64_t{le[i]} << (8 * i);
  STRIDER_CHECK(len <= file_size - 8, "load_safetensors", path, ": header length ", len, " exceeds the file");
  std::string h(len, '\0');
  in.read(h.data(), static_cast<std::streamsize>(len));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(h);
  } catch (const std::exception& e) {
    STRIDER_CHECK(false, "load_safetensors", path, ": corrupt header: ", e.what());
  }
  const uint64_t data_size = file_size - 8 - len;
  std::vector<char> data(data_size);
  in.read(data.data(), static_cast<std::streamsize>(data_size));
  STRIDER_CHECK(in.good() || data_size == 0, "load_safetensors", path, ": truncated data section");
  SafetensorsFile out;
  uint64_t covered = 0;
  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      for (auto& [k, v] : entry.items()) out.metadata[k] = v.get<std::string>();
      continue;
    }
    const ScalarType dt = dtype_of(entry.at("dtype").get<std::string>(), path);
    auto shape = entry.at("shape").get<std::vector<int64_t>>();
    auto off = entry.at("data_offsets").get<std::vector<uint64_t>>();
    DimVector dims(shape.begin(), shape.end());
    const uint64_t want = static_cast<uint64_t>(product(dims)) * element_size(dt);
    STRIDER_CHECK(off.size() == 2 && off[0] <= off[1] && off[1] <= data_size && off[1] - off[0] == want,
                  "load_safetensors", path, ": tensor '", name, "' has inconsistent offsets for shape ",
                  IntArrayRef(dims), " ", dt);
    Tensor t = empty(dims, dt);
    if (want) std::memcpy(t.data(), data.data() + off[0], want);
    covered += want;
    out.tensors[name] = t;
  }
  STRIDER_CHECK(covered == data_size, "load_safetensors", path, ": data section has ", data_size,
                " bytes but the tensors cover ", covered);
  if (auto it = out.metadata.find(kCrcKey); it != out.metadata.end()) {
    const uLong crc = crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data_size));
    STRIDER_CHECK(std::to_string(crc) == it->second, "load_safetensors", path,
                  ": checksum mismatch (file corrupted); expected crc32 ", it->second, ", got ", crc);
  }
  return out;
}

}  // namespace strider::io
