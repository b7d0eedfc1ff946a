// Any byte string opened as an io::TokenFile (auto, uint16, uint32) either opens (every token
// within the file, windows readable) or throws strider::Error.
#include <strider/strider.h>

#include "fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strider::fuzz::MemoryFile file(data, size);
  for (auto dtype : {strider::io::TokenDtype::Auto, strider::io::TokenDtype::UInt16, strider::io::TokenDtype::UInt32}) {
    try {
      strider::io::TokenFile f(file.path(), dtype);
      if (f.size() <= 0 || f.size() > static_cast<int64_t>(size / 2)) std::abort();
      (void)f.max_token();
      (void)f.window(0, f.size());
      (void)f.window(f.size() / 2, f.size() - f.size() / 2);
    } catch (const strider::Error&) {
    }
  }
  return 0;
}
