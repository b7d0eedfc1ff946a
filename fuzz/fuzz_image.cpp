// Any byte string given to io::read_image either decodes (uint8 [1 or 3, H, W]) or throws
// strider::Error naming the file: libpng's and libjpeg's errors never escape as a crash, an
// exit or a longjmp through C++ frames. A decoded image is also resized and cropped.
#include <strider/strider.h>

#include "fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strider::fuzz::MemoryFile file(data, size);
  try {
    strider::Tensor img = strider::io::read_image(file.path());
    if (img.dim() != 3 || (img.size(0) != 1 && img.size(0) != 3)) std::abort();
    if (img.numel() <= 4096) (void)strider::io::resize_and_center_crop(strider::io::convert_channels(img, 3), 8);
  } catch (const strider::Error&) {
  }
  return 0;
}
