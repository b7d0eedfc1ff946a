// Any byte string given to io::read_csv (float32 and float64, every column) either loads or
// throws strider::Error; the header row is read the same way on its own.
#include <strider/strider.h>

#include "fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strider::fuzz::MemoryFile file(data, size);
  try {
    const std::vector<std::string> header = strider::io::read_csv_header(file.path());
    strider::Tensor t = strider::io::read_csv(file.path(), {.dtype = strider::kDouble});
    if (t.size(1) != static_cast<int64_t>(header.size())) std::abort();
    strider::io::CsvOptions last{.columns = {header.back()}};
    (void)strider::io::read_csv(file.path(), last);
  } catch (const strider::Error&) {
  }
  return 0;
}
