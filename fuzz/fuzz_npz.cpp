// Any byte string given to io::load_npz either loads (each entry's elements readable) or throws
// strider::Error; a zip directory or entry that lies about sizes or offsets never reads outside.
#include <strider/strider.h>

#include "fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strider::fuzz::MemoryFile file(data, size);
  try {
    for (auto& [name, t] : strider::io::load_npz(file.path())) (void)strider::sum(t.to(strider::kDouble));
  } catch (const strider::Error&) {
  }
  return 0;
}
