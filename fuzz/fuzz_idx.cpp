// Any byte string (plain or gzip) given to io::read_idx either loads or throws strider::Error.
#include <strider/strider.h>

#include "fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strider::fuzz::MemoryFile file(data, size);
  try {
    strider::Tensor t = strider::io::read_idx(file.path());
    (void)strider::sum(t.to(strider::kDouble));
  } catch (const strider::Error&) {
  }
  return 0;
}
