// Any byte string given to io::load_npy either loads (a tensor no larger than the file, every
// element readable) or throws strider::Error; nothing else.
#include <strider/strider.h>

#include "fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strider::fuzz::MemoryFile file(data, size);
  try {
    strider::Tensor t = strider::io::load_npy(file.path());
    if (t.numel() > static_cast<int64_t>(size)) std::abort();  // every element takes at least a byte of the file
    (void)strider::sum(t.to(strider::kDouble));
  } catch (const strider::Error&) {
  }
  return 0;
}
