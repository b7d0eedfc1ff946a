#include "strider/io/npy.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "io/mapped_file.h"
#include "io/npy_decode.h"
#include "io/npy_header.h"
#include "strider/core/layout.h"
#include "strider/io/file_io.h"
#include "strider/ops/factory.h"

namespace strider::io {
namespace {

// A simple NumPy type string: byte order, kind ('b', 'i', 'u', 'f') and item size.
struct NpyType {
  char order;  // '<', '>' or '|'
  char kind;
  int size;
  bool swap() const { return order == '>' && size > 1; }
};

NpyType parse_descr(const std::string& descr, const std::string& name, const char* op) {
  const char* hint = " (strider reads bool, int8/16/32/64, uint8/16/32/64, float16/32/64)";
  STRIDER_CHECK(descr.size() == 3 && (descr[0] == '<' || descr[0] == '>' || descr[0] == '|' || descr[0] == '='), op,
                name, ": unsupported dtype '", descr, "'", hint);
  NpyType t{descr[0] == '=' ? '<' : descr[0], descr[1], descr[2] - '0'};  // '=' is native: x86-64 is little-endian
  const bool ok = (t.kind == 'b' && t.size == 1) || ((t.kind == 'i' || t.kind == 'u') &&
                                                     (t.size == 1 || t.size == 2 || t.size == 4 || t.size == 8)) ||
                  (t.kind == 'f' && (t.size == 2 || t.size == 4 || t.size == 8));
  STRIDER_CHECK(ok, op, name, ": unsupported dtype '", descr, "'", hint);
  STRIDER_CHECK(t.order != '|' || t.size == 1, op, name, ": dtype '", descr, "' has no byte order but ", t.size,
                " bytes per item");
  return t;
}

ScalarType target_dtype(const NpyType& t) {
  switch (t.kind) {
    case 'b': return kBool;
    case 'f': return t.size == 2 ? kHalf : t.size == 4 ? kFloat : kDouble;
    case 'u': return t.size == 1 ? kByte : t.size == 2 ? kInt : kLong;
    default: return t.size <= 4 ? kInt : kLong;
  }
}

uint64_t load_bits(const unsigned char* p, int size, bool swap) {
  uint64_t v = 0;
  for (int i = 0; i < size; ++i) v |= uint64_t{p[swap ? size - 1 - i : i]} << (8 * i);
  return v;
}

int64_t sign_extend(uint64_t v, int size) {
  const int shift = 64 - 8 * size;
  return static_cast<int64_t>(v << shift) >> shift;
}

// Checks values a strider dtype cannot take directly: bools other than 0/1, uint64 above int64.
void check_values(const unsigned char* src, int64_t n, const NpyType& t, const std::string& name, const char* op) {
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t v = load_bits(src + i * t.size, t.size, t.swap());
    if (t.kind == 'b')
      STRIDER_CHECK(v <= 1, op, name, ": bool element ", i, " has byte value ", v, "; NumPy bools are 0 or 1");
    else if (t.kind == 'u' && t.size == 8)
      STRIDER_CHECK(v <= uint64_t{INT64_MAX}, op, name, ": uint64 element ", i, " is ", v,
                    ", above int64's maximum (strider reads uint64 as int64); convert it in NumPy first");
  }
}

// Decodes n items of type t into dst, a buffer of target_dtype(t), in file order.
void convert(const unsigned char* src, int64_t n, const NpyType& t, void* dst) {
  const ScalarType out = target_dtype(t);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t bits = load_bits(src + i * t.size, t.size, t.swap());
    if (t.kind == 'f' || t.kind == 'b' || (t.kind == 'u' && t.size == 1)) {
      std::memcpy(static_cast<unsigned char*>(dst) + i * t.size, &bits, static_cast<size_t>(t.size));  // little-endian host
    } else if (out == kInt) {
      const auto v = static_cast<int32_t>(t.kind == 'i' ? sign_extend(bits, t.size) : static_cast<int64_t>(bits));
      static_cast<int32_t*>(dst)[i] = v;
    } else {
      static_cast<int64_t*>(dst)[i] = t.kind == 'i' ? sign_extend(bits, t.size) : static_cast<int64_t>(bits);
    }
  }
}

DimVector fortran_strides(IntArrayRef sizes) {
  DimVector s(sizes.size(), 1);
  for (size_t i = 1; i < sizes.size(); ++i) s[i] = s[i - 1] * std::max<int64_t>(sizes[i - 1], 1);
  return s;
}

std::string header_text(const std::string& descr, IntArrayRef shape) {
  std::string shape_text = "(";
  for (size_t i = 0; i < shape.size(); ++i) shape_text += std::to_string(shape[i]) + (shape.size() == 1 ? ",)" : i + 1 < shape.size() ? ", " : ")");
  if (shape.empty()) shape_text += ")";
  return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_text + ", }";
}

const char* descr_of(ScalarType t) {
  switch (t) {
    case kFloat: return "<f4";
    case kDouble: return "<f8";
    case kHalf: return "<f2";
    case kLong: return "<i8";
    case kInt: return "<i4";
    case kByte: return "|u1";
    case kBool: return "|b1";
    case kBFloat16: return nullptr;
  }
  return nullptr;
}

}  // namespace

Tensor decode_npy(std::shared_ptr<const void> owner, unsigned char* bytes, uint64_t size, const std::string& name,
                  const char* op) {
  const NpyHeader h = parse_npy_header(bytes, size, name, op);
  const NpyType type = parse_descr(h.descr, name, op);
  int64_t numel = 0;
  try {
    numel = checked_numel(h.shape, op);
  } catch (const Error& e) {
    STRIDER_CHECK(false, op, name, ": shape ", IntArrayRef(h.shape), " is too large: ", message_without_op(e));
  }
  uint64_t nbytes = 0;
  STRIDER_CHECK(!__builtin_mul_overflow(static_cast<uint64_t>(numel), static_cast<uint64_t>(type.size), &nbytes), op,
                name, ": shape ", IntArrayRef(h.shape), " of '", h.descr, "' is too large");
  const uint64_t have = size - h.data_offset;
  STRIDER_CHECK(have == nbytes, op, name, ": shape ", IntArrayRef(h.shape), " of '", h.descr, "' needs ", nbytes,
                " data bytes but the file has ", have, have < nbytes ? " (truncated)" : " (trailing bytes)");
  const DimVector strides = h.fortran_order ? fortran_strides(h.shape) : layout::contiguous_strides(h.shape);
  const ScalarType dtype = target_dtype(type);
  unsigned char* src = bytes + h.data_offset;
  if (type.kind == 'b' || (type.kind == 'u' && type.size == 8)) check_values(src, numel, type, name, op);
  const bool same_layout = static_cast<int>(element_size(dtype)) == type.size && !type.swap();
  if (same_layout && reinterpret_cast<uintptr_t>(src) % element_size(dtype) == 0)
    return tensor_over_bytes(std::move(owner), src, h.shape, strides, dtype);
  Tensor buffer = empty({numel}, dtype);
  if (same_layout) std::memcpy(buffer.data(), src, nbytes);
  else convert(src, numel, type, buffer.data());
  return buffer.as_strided(h.shape, strides);
}

Tensor load_npy(const std::string& path) {
  std::shared_ptr<const MappedFile> file = MappedFile::open(path, "load_npy", MappedFile::Access::Read);
  return decode_npy(file, file->data(), file->size(), path, "load_npy");
}

void save_npy(const std::string& path, const Tensor& t) {
  STRIDER_CHECK(t.defined(), "save_npy", path, ": the tensor is undefined");
  const char* descr = descr_of(t.dtype());
  STRIDER_CHECK(descr != nullptr, "save_npy", path, ": NumPy has no ", t.dtype(),
                " dtype; convert first (t.to(kFloat))");
  std::string header = header_text(descr, t.sizes());
  // NumPy pads the header with spaces so the data starts at a multiple of 64 bytes.
  const bool v1 = header.size() + 64 <= 65535;  // the 1.0 header length is 16 bits
  const size_t prefix = v1 ? 10 : 12;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string head = std::string("\x93NUMPY") + char(v1 ? 1 : 2) + char(0);
  for (size_t i = 0; i < prefix - 8; ++i) head += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  head += header;

  const Tensor c = t.contiguous();
  const std::string tmp = temporary_path(path);
  remove_stale_temporaries(path);
  try {
    File f(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    STRIDER_CHECK(f.is_open(), "save_npy", "cannot create ", tmp, ": ", std::strerror(errno));
    write_exact(f.fd(), head.data(), head.size(), tmp, "save_npy");
    if (c.numel() > 0) write_exact(f.fd(), c.data(), c.nbytes(), tmp, "save_npy");
    STRIDER_CHECK(::fsync(f.fd()) == 0, "save_npy", "fsync of ", tmp, " failed: ", std::strerror(errno));
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  STRIDER_CHECK(!ec, "save_npy", "cannot rename ", tmp, " to ", path, ": ", ec.message());
  fsync_directory(parent_directory(path));
}

}  // namespace strider::io
