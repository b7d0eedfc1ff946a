// Writes a small image folder for the trainer's tests: ROOT/class_<k>/img_<i>.png|jpg, CLASSES
// classes of PER_CLASS images each. Each class has its own color, so a CNN can learn them in a
// few steps; every third image is a JPEG, every fifth is gray, and sizes vary (the trainer
// resizes). Written with libpng and libjpeg, the libraries strider reads them with.
// Usage: make_image_folder ROOT CLASSES PER_CLASS [SIDE]   (SIDE: the smallest side, default 16)
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

// After <cstdio> and <cstddef>: jpeglib.h uses FILE and size_t without including them.
#include <jpeglib.h>
#include <png.h>

namespace {

struct Image {
  int width, height, channels;
  std::vector<unsigned char> pixels;  // row-major, interleaved channels
};

bool write_png(const std::string& path, const Image& img) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(f);
    return false;
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, img.width, img.height, 8, img.channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < img.height; ++y)
    png_write_row(png, img.pixels.data() + static_cast<size_t>(y) * img.width * img.channels);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return std::fclose(f) == 0;
}

bool write_jpeg(const std::string& path, const Image& img) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);  // libjpeg's default handler exits on error: fine for a test tool
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, f);
  c.image_width = static_cast<JDIMENSION>(img.width);
  c.image_height = static_cast<JDIMENSION>(img.height);
  c.input_components = img.channels;
  c.in_color_space = img.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 95, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<unsigned char*>(img.pixels.data()) +
                   static_cast<size_t>(c.next_scanline) * img.width * img.channels;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  return std::fclose(f) == 0;
}

// Class k's color with seeded noise; gray images keep the class's brightness.
Image make_image(int k, int i, int side, std::mt19937& rng) {
  Image img{side + (i % 4) * side / 8, side + (i % 3) * side / 5, i % 5 == 4 ? 1 : 3, {}};
  const int base[3][3] = {{200, 40, 40}, {40, 200, 40}, {40, 40, 200}};
  std::uniform_int_distribution<int> noise(-30, 30);
  for (int p = 0; p < img.width * img.height; ++p)
    for (int ch = 0; ch < img.channels; ++ch) {
      const int v = img.channels == 1 ? 60 + 70 * (k % 3) : base[k % 3][ch];
      img.pixels.push_back(static_cast<unsigned char>(std::clamp(v + noise(rng), 0, 255)));
    }
  return img;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: make_image_folder ROOT CLASSES PER_CLASS [SIDE]\n");
    return 2;
  }
  const std::string root = argv[1];
  const int classes = std::atoi(argv[2]), per_class = std::atoi(argv[3]), side = argc == 5 ? std::atoi(argv[4]) : 16;
  std::mt19937 rng(1234);
  for (int k = 0; k < classes; ++k) {
    const std::string dir = root + "/class_" + std::to_string(k);
    std::filesystem::create_directories(dir);
    for (int i = 0; i < per_class; ++i) {
      const Image img = make_image(k, i, side, rng);
      const std::string stem = dir + "/img_" + std::to_string(100 + i);
      const bool ok = i % 3 == 2 ? write_jpeg(stem + ".jpg", img) : write_png(stem + ".png", img);
      if (!ok) {
        std::fprintf(stderr, "make_image_folder: cannot write %s\n", stem.c_str());
        return 1;
      }
    }
  }
  return 0;
}
