// libpng's classic API with its longjmp error path kept inside one C-style function.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "io/image_decode.h"

namespace strider::io {
namespace {

struct PngInput {
  const unsigned char* data;
  size_t size;
  size_t pos;
  RawImage* out;
};

void on_error(png_structp png, png_const_charp message) {
  auto* in = static_cast<PngInput*>(png_get_error_ptr(png));
  std::snprintf(in->out->message, sizeof in->out->message, "%s", message);
  png_longjmp(png, 1);  // to decode_png_raw's setjmp; only trivially destructible frames in between
}

void on_warning(png_structp, png_const_charp) {}  // ancillary-chunk problems: libpng recovers

void on_read(png_structp png, png_bytep dst, size_t n) {
  auto* in = static_cast<PngInput*>(png_get_io_ptr(png));
  if (n > in->size - in->pos) png_error(png, "unexpected end of file (truncated PNG)");
  std::memcpy(dst, in->data + in->pos, n);
  in->pos += n;
}

}  // namespace

int decode_png_raw(const unsigned char* data, size_t size, uint64_t max_bytes, RawImage* out) noexcept {
  if (size < 8 || png_sig_cmp(data, 0, 8) != 0) {
    std::snprintf(out->message, sizeof out->message, "not a PNG file (bad signature)");
    return 1;
  }
  PngInput in{data, size, 0, out};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &in, on_error, on_warning);
  if (png == nullptr) {
    std::snprintf(out->message, sizeof out->message, "libpng could not start (out of memory)");
    return 1;
  }
  png_infop info = png_create_info_struct(png);
  // Written after setjmp and read after a longjmp: volatile, so their values survive it.
  unsigned char* volatile pixels = nullptr;
  png_bytep* volatile rows = nullptr;
  if (setjmp(png_jmpbuf(png))) {
    std::free(pixels);
    std::free(rows);
    png_destroy_read_struct(&png, &info, nullptr);
    return 1;
  }
  if (info == nullptr) png_error(png, "out of memory");
  png_set_read_fn(png, &in, on_read);
  png_read_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info), height = png_get_image_height(png, info);
  const int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  // Palette -> RGB, gray below 8 bits -> 8, 16 bits -> 8 (scaled, rounded), alpha dropped.
  // A palette's tRNS becomes alpha as the palette expands, and is dropped with it, as PIL's
  // convert("RGB") drops it.
  const bool palette_alpha = color == PNG_COLOR_TYPE_PALETTE && png_get_valid(png, info, PNG_INFO_tRNS);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_scale_16(png);
  if ((color & PNG_COLOR_MASK_ALPHA) || palette_alpha) png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int channels = png_get_channels(png, info);
  const size_t row_bytes = png_get_rowbytes(png, info);
  if ((channels != 1 && channels != 3) || row_bytes != size_t{width} * channels)
    png_error(png, "unexpected pixel layout after conversion");
  if (uint64_t{height} * row_bytes > max_bytes) png_error(png, "image too large (pixel bytes exceed the limit)");
  pixels = static_cast<unsigned char*>(std::malloc(height * row_bytes + 1));
  rows = static_cast<png_bytep*>(std::malloc((height + 1) * sizeof(png_bytep)));
  if (pixels == nullptr || rows == nullptr) png_error(png, "out of memory");
  for (png_uint_32 y = 0; y < height; ++y) rows[y] = pixels + y * row_bytes;
  png_read_image(png, rows);
  png_read_end(png, nullptr);
  out->pixels = pixels;
  out->width = width;
  out->height = height;
  out->channels = channels;
  std::free(rows);
  png_destroy_read_struct(&png, &info, nullptr);
  return 0;
}

}  // namespace strider::io
