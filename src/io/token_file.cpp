#include "strider/io/token_file.h"

#include <cstring>
#include <mutex>

#include "io/mapped_file.h"
#include "strider/ops/factory.h"

namespace strider::io {
namespace {

constexpr const char* kOp = "TokenFile";
constexpr int32_t kLlmcMagic = 20240520;
constexpr uint64_t kLlmcHeaderBytes = 256 * 4;

int32_t le32(const unsigned char* p) {
  return static_cast<int32_t>(uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24);
}

const char* name_of(TokenDtype t) { return t == TokenDtype::UInt32 ? "uint32" : t == TokenDtype::UInt16 ? "uint16" : "auto"; }

}  // namespace

struct TokenFile::State {
  std::shared_ptr<const MappedFile> file;
  const unsigned char* tokens = nullptr;
  int64_t count = 0;
  int width = 2;  // bytes per token
  bool llmc = false;
  std::once_flag max_once;
  int64_t max_token = -1;

  uint32_t at(int64_t i) const {
    const unsigned char* p = tokens + i * width;
    return width == 2 ? uint32_t{p[0]} | uint32_t{p[1]} << 8
                      : uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
  }
};

TokenDtype token_dtype_from_string(std::string_view name) {
  if (name == "auto") return TokenDtype::Auto;
  if (name == "uint16") return TokenDtype::UInt16;
  if (name == "uint32") return TokenDtype::UInt32;
  STRIDER_CHECK(false, "token_dtype", "unknown token dtype '", name, "'; use auto, uint16 or uint32");
  return TokenDtype::Auto;
}

TokenFile::TokenFile(const std::string& path, TokenDtype dtype) : state_(std::make_shared<State>()) {
  State& s = *state_;
  s.file = MappedFile::open(path, kOp, MappedFile::Access::ReadOnly);
  const uint64_t size = s.file->size();
  const unsigned char* d = s.file->data();
  STRIDER_CHECK(size > 0, kOp, path, " is empty; a token file needs at least one token");
  uint64_t offset = 0;
  if (size >= 4 && le32(d) == kLlmcMagic) {
    STRIDER_CHECK(size >= kLlmcHeaderBytes, kOp, path, " starts with llm.c's magic ", kLlmcMagic, " but has only ", size,
                  " bytes, less than its 1024-byte header (truncated)");
    const int32_t version = le32(d + 4), count = le32(d + 8);
    STRIDER_CHECK(version == 1 || version == 2, kOp, path, ": llm.c header version ", version,
                  " is not a token file's (1: uint16 tokens, 2: uint32 tokens)");
    const TokenDtype header_dtype = version == 1 ? TokenDtype::UInt16 : TokenDtype::UInt32;
    STRIDER_CHECK(dtype == TokenDtype::Auto || dtype == header_dtype, kOp, path, ": the llm.c header says ",
                  name_of(header_dtype), " tokens (version ", version, ") but ", name_of(dtype),
                  " was asked for; drop the token dtype or pass ", name_of(header_dtype));
    s.llmc = true;
    s.width = version == 1 ? 2 : 4;
    offset = kLlmcHeaderBytes;
    const uint64_t body = size - offset;
    STRIDER_CHECK(count >= 0 && body == static_cast<uint64_t>(count) * s.width, kOp, path, ": the llm.c header counts ",
                  count, " tokens (", static_cast<int64_t>(count) * s.width, " bytes) but ", body,
                  " bytes follow the header; the file is truncated or the header is wrong");
  } else {
    s.width = dtype == TokenDtype::UInt32 ? 4 : 2;
    STRIDER_CHECK(size % s.width == 0, kOp, path, " has ", size, " bytes, not a multiple of the ", s.width,
                  "-byte ", s.width == 2 ? "uint16" : "uint32", " token size (truncated, or the wrong token dtype)");
  }
  s.count = static_cast<int64_t>((size - offset) / s.width);
  STRIDER_CHECK(s.count > 0, kOp, path, " holds no tokens (only llm.c's header)");
  s.tokens = d + offset;
}

int64_t TokenFile::size() const { return state_->count; }
TokenDtype TokenFile::dtype() const { return state_->width == 2 ? TokenDtype::UInt16 : TokenDtype::UInt32; }
bool TokenFile::has_llmc_header() const { return state_->llmc; }
const std::string& TokenFile::path() const { return state_->file->path(); }

int64_t TokenFile::max_token() const {
  State& s = *state_;
  std::call_once(s.max_once, [&s] {
    uint32_t m = 0;  // one loop per width, so each vectorizes (x86-64 is little-endian)
    if (s.width == 2) {
      for (int64_t i = 0; i < s.count; ++i) {
        uint16_t v;
        std::memcpy(&v, s.tokens + 2 * i, 2);
        m = std::max<uint32_t>(m, v);
      }
    } else {
      for (int64_t i = 0; i < s.count; ++i) {
        uint32_t v;
        std::memcpy(&v, s.tokens + 4 * i, 4);
        m = std::max(m, v);
      }
    }
    s.max_token = m;
  });
  return s.max_token;
}

Tensor TokenFile::window(int64_t start, int64_t len) const {
  const State& s = *state_;
  STRIDER_CHECK(start >= 0 && len >= 0 && start <= s.count && len <= s.count - start, "TokenFile::window", path(),
                ": window [", start, ", ", start, " + ", len, ") is outside the file's ", s.count, " tokens");
  Tensor out = empty({len}, kLong);
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < len; ++i) o[i] = s.at(start + i);
  return out;
}

}  // namespace strider::io
