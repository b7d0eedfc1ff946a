// libjpeg (libjpeg-turbo) with error_exit replaced by a longjmp back into decode_jpeg_raw:
// throwing through libjpeg's C frames is not safe, and its default error_exit calls exit().
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

#include "io/image_decode.h"

namespace strider::io {
namespace {

struct ErrorManager {
  jpeg_error_mgr base;  // first, so libjpeg's pointer to it is a pointer to the whole
  std::jmp_buf jump;
  RawImage* out;
  int warnings;
};

// A progressive JPEG of a few KiB can hold thousands of scans and take minutes to decode;
// libjpeg-turbo's TurboJPEG API stops at 500 scans too.
constexpr int kMaxScans = 500;

struct ScanLimit {
  jpeg_progress_mgr base;  // first, as above
  ErrorManager* err;
};

void on_progress(j_common_ptr cinfo) {
  auto* limit = reinterpret_cast<ScanLimit*>(cinfo->progress);
  const int scans = reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number;
  if (scans <= kMaxScans) return;
  std::snprintf(limit->err->out->message, sizeof limit->err->out->message,
                "more than %d progressive scans (a decoding-time bomb, or corrupt)", kMaxScans);
  std::longjmp(limit->err->jump, 1);  // through libjpeg's C frames only, as error_exit does
}

void on_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  char text[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, text);
  std::snprintf(err->out->message, sizeof err->out->message, "%s", text);
  std::longjmp(err->jump, 1);
}

// Warnings are corrupt or missing data (a truncated file decodes as gray): remember the first.
void on_message(j_common_ptr cinfo, int level) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  if (level >= 0 || err->warnings++ > 0) return;
  char text[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, text);
  std::snprintf(err->out->message, sizeof err->out->message, "%s", text);
}

void on_output(j_common_ptr) {}

}  // namespace

int decode_jpeg_raw(const unsigned char* data, size_t size, uint64_t max_bytes, RawImage* out) noexcept {
  if (size < 3 || data[0] != 0xFF || data[1] != 0xD8 || data[2] != 0xFF) {
    std::snprintf(out->message, sizeof out->message, "not a JPEG file (no SOI marker)");
    return 1;
  }
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  cinfo.err = jpeg_std_error(&err.base);
  err.base.error_exit = on_error_exit;
  err.base.emit_message = on_message;
  err.base.output_message = on_output;
  err.out = out;
  err.warnings = 0;
  ScanLimit limit;
  limit.base.progress_monitor = on_progress;
  limit.err = &err;
  unsigned char* volatile pixels = nullptr;  // survives the longjmp
  if (setjmp(err.jump)) {
    std::free(pixels);
    jpeg_destroy_decompress(&cinfo);
    return 1;
  }
  jpeg_create_decompress(&cinfo);
  cinfo.progress = &limit.base;
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.num_components == 1) {
    cinfo.out_color_space = JCS_GRAYSCALE;
  } else if (cinfo.num_components == 3) {
    cinfo.out_color_space = JCS_RGB;
  } else {
    std::snprintf(out->message, sizeof out->message, "%d-component (CMYK/YCCK) JPEG; only grayscale and RGB are read",
                  cinfo.num_components);
    std::longjmp(err.jump, 1);
  }
  const int channels = cinfo.num_components;
  if (uint64_t{cinfo.image_width} * cinfo.image_height * channels > max_bytes) {
    std::snprintf(out->message, sizeof out->message, "image too large (%ux%u; pixel bytes exceed the limit)",
                  cinfo.image_width, cinfo.image_height);
    std::longjmp(err.jump, 1);
  }
  jpeg_start_decompress(&cinfo);
  const size_t row_bytes = size_t{cinfo.output_width} * cinfo.output_components;
  pixels = static_cast<unsigned char*>(std::malloc(row_bytes * cinfo.output_height + 1));
  if (pixels == nullptr) {
    std::snprintf(out->message, sizeof out->message, "out of memory");
    std::longjmp(err.jump, 1);
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = pixels + row_bytes * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  if (err.warnings > 0) std::longjmp(err.jump, 1);  // the first warning's text is in out->message
  out->pixels = pixels;
  out->width = cinfo.output_width;
  out->height = cinfo.output_height;
  out->channels = cinfo.output_components;
  jpeg_destroy_decompress(&cinfo);
  return 0;
}

}  // namespace strider::io
