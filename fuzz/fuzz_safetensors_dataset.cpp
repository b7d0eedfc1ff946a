// Any byte string given to io::load_safetensors_dataset either loads (every field sharing the
// sample count) or throws strider::Error.
#include <strider/strider.h>

#include "fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strider::fuzz::MemoryFile file(data, size);
  try {
    strider::io::SafetensorsDataset ds = strider::io::load_safetensors_dataset(file.path());
    for (auto& [name, t] : ds.fields)
      if (t.dim() < 1 || t.size(0) != ds.size) std::abort();
  } catch (const strider::Error&) {
  }
  return 0;
}
