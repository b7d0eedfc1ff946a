#pragma once
// Flat token files for GPT training, memory-mapped:
//   - nanoGPT's train.bin / val.bin: raw little-endian uint16 tokens, no header;
//   - llm.c's .bin (dev/data/data_common.py): a 1 KiB header of 256 little-endian int32s
//     (header[0] = 20240520, header[1] = 1 for uint16 tokens or 2 for uint32, header[2] = the
//     token count), then the tokens;
//   - raw little-endian uint32 tokens, when the caller says so.
// A file starting with llm.c's magic is always read by its header; an explicit dtype must then
// agree with the header's version. The mapping lives as long as the TokenFile (datasets that
// outgrow memory stay on disk, as nanoGPT's np.memmap): do not rewrite or truncate the file while
// a run reads it (write a new file and rename it into place: the mapping keeps the old one).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "strider/core/tensor.h"

namespace strider::io {

enum class TokenDtype { Auto, UInt16, UInt32 };  // Auto: llm.c's header if present, else raw uint16

// "auto", "uint16", "uint32" (as --token-dtype spells them); anything else is an Error.
TokenDtype token_dtype_from_string(std::string_view name);

class TokenFile {
 public:
  // Maps `path`. Errors name the file: missing, not a regular file, empty, no tokens, a length
  // not a multiple of the token size, an llm.c header with an unknown version, a token count
  // that disagrees with the file's length, or a dtype that disagrees with the header.
  explicit TokenFile(const std::string& path, TokenDtype dtype = TokenDtype::Auto);

  int64_t size() const;  // tokens
  TokenDtype dtype() const;  // UInt16 or UInt32, as resolved
  bool has_llmc_header() const;
  const std::string& path() const;
  // The largest token id, computed on the first call (one pass over the file) and kept; copies
  // of a TokenFile share it. Thread-safe.
  int64_t max_token() const;
  // Tokens [start, start + len) as a new int64 tensor [len]; the range must lie in the file.
  Tensor window(int64_t start, int64_t len) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace strider::io
