// Any byte string given to io::load_safetensors either loads (every tensor within the file,
// with the shape and dtype its header claims) or throws strider::Error; nothing else.
#include <strider/strider.h>

#include "fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strider::fuzz::MemoryFile file(data, size);
  try {
    strider::io::SafetensorsFile f = strider::io::load_safetensors(file.path());
    for (auto& [name, t] : f.tensors) {
      if (t.nbytes() > size) std::abort();  // a tensor larger than the file came from nowhere
      (void)strider::sum(t.to(strider::kDouble));  // touch every element
    }
  } catch (const strider::Error&) {
  }
  return 0;
}
