#pragma once
// PNG and JPEG decoding into interleaved 8-bit pixels, C style: libpng and libjpeg report errors
// by longjmp, so these functions keep no C++ object with a destructor alive across their
// setjmp, own their buffers through plain pointers, and return a status with a message for
// the caller to throw. They never print, exit or abort.
#include <cstddef>
#include <cstdint>

namespace strider::io {

struct RawImage {
  unsigned char* pixels = nullptr;  // malloc'd [height, width, channels]; the caller frees it
  uint32_t width = 0, height = 0;
  int channels = 0;  // 1 (gray) or 3 (RGB)
  char message[200] = {};  // why decoding failed
};

// 0 on success (out->pixels set); nonzero on failure (out->message set, nothing to free).
// An image whose pixels would exceed `max_bytes` fails before allocating.
int decode_png_raw(const unsigned char* data, size_t size, uint64_t max_bytes, RawImage* out) noexcept;
int decode_jpeg_raw(const unsigned char* data, size_t size, uint64_t max_bytes, RawImage* out) noexcept;

}  // namespace strider::io
