// PNG/JPEG decoding against PIL, resize and crop against PyTorch/torchvision, ImageFolder, bad images.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <filesystem>
#include <tuple>

#include "io/reader_test_util.h"
#include "support/compare.h"

namespace strider {
namespace {

using testing::data_path;
using testing::error_of;
using testing::int_values;
namespace fs = std::filesystem;

Tensor golden(const std::string& name) { return io::load_npy(data_path("images/" + name)); }

TEST(Image, DecodesAsPilDoes) {
  for (const char* name : {"rgb.png", "gray.png", "rgba.png", "palette.png", "palette_trns.png", "palette2_trns.png",
                           "gray16.png", "rgb.jpg", "gray.jpg"}) {
    SCOPED_TRACE(name);
    std::string npy = name;
    npy[npy.find('.')] = '_';
    Tensor got = io::read_image(data_path(std::string("images/") + name));
    Tensor want = golden(npy + ".npy");
    EXPECT_EQ(got.dtype(), kByte);
    EXPECT_EQ(got.sizes(), want.sizes());
    EXPECT_EQ(int_values(got), int_values(want));  // the same libjpeg as PIL's: bit-identical
  }
}

TEST(Image, ResizeAndCropMatchTorch) {
  const Tensor src = golden("rgb_chw.npy");
  for (auto [h, w] : {std::pair{5, 4}, std::pair{13, 11}, std::pair{7, 3}}) {
    SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w));
    Tensor got = io::resize_image(src, h, w);
    EXPECT_TRUE(testing::all_close(got, golden("resize_" + std::to_string(h) + "x" + std::to_string(w) + ".npy"), 0, 1));
  }
  for (int size : {4, 6})
    EXPECT_TRUE(testing::all_close(io::resize_and_center_crop(src, size), golden("resize_crop_" + std::to_string(size) + ".npy"), 0, 1));
  EXPECT_EQ(int_values(io::center_crop(src, 4, 5)), int_values(golden("crop_4x5.npy")));
  EXPECT_EQ(int_values(io::convert_channels(src, 1)), int_values(golden("rgb_to_gray.npy")));
  EXPECT_EQ(io::convert_channels(golden("gray_png.npy"), 3).sizes(), IntArrayRef({3, 5, 6}));
  EXPECT_NE(error_of([&] { io::center_crop(src, 8, 2); }).find("cannot crop 8x2"), std::string::npos);
  EXPECT_NE(error_of([&] { io::resize_image(zeros({3, 2, 2}), 1, 1); }).find("uint8 [C, H, W]"), std::string::npos);
}

Tensor patterned(int64_t c, int64_t h, int64_t w) {
  Tensor t = empty({c, h, w}, kByte);
  uint8_t* p = t.data_ptr<uint8_t>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<uint8_t>((i * 37 + i / 7) % 251);
  return t;
}

TEST(Image, ResizeAndCropComputesOnlyTheCrop) {
  // A 1x60000 strip to a side of 2048: the whole resized image would be 2048 x 122,880,000
  // (251 GB); only the 2048 x 2048 crop is made.
  const Tensor strip = patterned(1, 1, 60000);
  EXPECT_EQ(io::resize_and_center_crop(strip, 2048).sizes(), IntArrayRef({1, 2048, 2048}));
  // Each pixel is the one the whole resize gives it, for both orientations and odd offsets.
  for (auto [c, h, w] : {std::tuple{3, 7, 50}, std::tuple{1, 41, 9}, std::tuple{3, 12, 13}}) {
    const Tensor img = patterned(c, h, w);
    for (int64_t size : {2, 3, 5, 8}) {
      SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w) + " to " + std::to_string(size));
      const int64_t shorter = std::min(h, w), longer = std::max(h, w);
      const int64_t scaled = size * longer / shorter;
      const Tensor whole = io::resize_image(img, h <= w ? size : scaled, h <= w ? scaled : size);
      EXPECT_EQ(int_values(io::resize_and_center_crop(img, size)), int_values(io::center_crop(whole, size, size)));
    }
  }
}

TEST(Image, CorruptOrTruncatedImagesNameTheFile) {
  struct Case {
    const char* what;
    std::string bytes;
    const char* expect;
  };
  const std::string png = testing::read_file(data_path("images/rgb.png"));
  const std::string jpg = testing::read_file(data_path("images/rgb.jpg"));
  std::string bad_crc = png;
  bad_crc[20] ^= 1;  // inside IHDR: its CRC no longer matches
  std::string huge = png;  // IHDR claims 100000 x 100000, with the CRC left stale
  huge[16] = 0, huge[17] = 1, huge[18] = '\x86', huge[19] = '\xa0', huge[20] = 0, huge[21] = 1, huge[22] = '\x86', huge[23] = '\xa0';
  const std::vector<Case> cases = {
      {"empty", "", "neither a PNG nor a JPEG"},
      {"text", "hello world", "neither a PNG nor a JPEG"},
      {"truncated PNG", png.substr(0, png.size() / 2), "corrupt or truncated"},
      {"PNG signature only", png.substr(0, 8), "corrupt or truncated"},
      {"PNG with a bad CRC", bad_crc, "corrupt or truncated"},
      {"PNG claiming a huge size", huge, "corrupt or truncated"},
      {"truncated JPEG", jpg.substr(0, jpg.size() / 2), "corrupt or truncated"},
      {"JPEG header only", jpg.substr(0, 20), "corrupt or truncated"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string p = testing::write_file("bad.img", c.bytes);
    const std::string msg = error_of([&] { io::read_image(p); });
    EXPECT_NE(msg.find(p), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
    std::remove(p.c_str());
  }
}

TEST(ImageFolder, ListsClassesAndFilesSortedAsTorchvision) {
  const fs::path root = testing::temp_path("folder");
  fs::remove_all(root);
  for (const char* d : {"dog", "cat/sub", "Zebra", "empty_not_a_class_file"}) fs::create_directories(root / d);
  fs::remove_all(root / "empty_not_a_class_file");
  fs::copy_file(data_path("images/rgb.png"), root / "dog/b.PNG");
  fs::copy_file(data_path("images/gray.jpg"), root / "dog/a.jpeg");
  fs::copy_file(data_path("images/rgb.jpg"), root / "cat/z.jpg");
  fs::copy_file(data_path("images/gray.png"), root / "cat/sub/a.png");
  fs::copy_file(data_path("images/rgb.png"), root / "Zebra/x.png");
  std::ofstream(root / "dog/notes.txt") << "skipped";
  std::ofstream(root / "README") << "not a class";
  io::ImageFolder f(root.string(), {.image_size = 4, .channels = 3});
  EXPECT_EQ(f.classes(), (std::vector<std::string>{"Zebra", "cat", "dog"}));  // byte order, as Python sorts
  std::vector<std::string> names;
  for (const auto& s : f.samples()) names.push_back(fs::relative(s.path, root).string() + ":" + std::to_string(s.label));
  EXPECT_EQ(names, (std::vector<std::string>{"Zebra/x.png:0", "cat/z.jpg:1", "cat/sub/a.png:1", "dog/a.jpeg:2",
                                             "dog/b.PNG:2"}));
  for (int64_t i = 0; i < f.size(); ++i) EXPECT_EQ(f.image(i).sizes(), IntArrayRef({3, 4, 4}));
  EXPECT_EQ(io::ImageFolder(root.string()).image(2).sizes(), IntArrayRef({1, 5, 6}));

  fs::create_directories(root / "empty");
  const std::string no_image = error_of([&] { io::ImageFolder g(root.string()); });
  EXPECT_NE(no_image.find("class folder " + (root / "empty").string() + " has no image"), std::string::npos) << no_image;
  const fs::path bare = testing::temp_path("bare");
  fs::create_directories(bare);
  const std::string no_class = error_of([&] { io::ImageFolder g(bare.string()); });
  EXPECT_NE(no_class.find(bare.string() + " has no class folder"), std::string::npos) << no_class;
  EXPECT_NE(error_of([&] { io::ImageFolder g((root / "README").string()); }).find("is not a directory"), std::string::npos);
  fs::remove_all(root);
  fs::remove_all(bare);
}

// Directory links are followed (a link to a directory elsewhere lists its images), but one that
// leads back to a directory it sits in is an error naming it: the walk would never end (a link
// to a parent, or two links leading to each other), or list the same images forever (a link to ".").
TEST(ImageFolder, NamesADirectoryLinkLoopInsteadOfWalkingForever) {
  const fs::path root = testing::temp_path("loops");
  fs::remove_all(root);
  for (const char* d : {"cat", "dog", "elsewhere"}) fs::create_directories(root / d);
  fs::copy_file(data_path("images/rgb.png"), root / "cat/a.png");
  fs::copy_file(data_path("images/rgb.png"), root / "dog/a.png");
  fs::copy_file(data_path("images/gray.png"), root / "elsewhere/b.png");
  fs::create_directory_symlink("../elsewhere", root / "dog/more");
  EXPECT_EQ(io::ImageFolder(root.string()).size(), 4);  // elsewhere/b.png as a class, and through dog/more
  for (auto [link, target] : {std::pair<const char*, const char*>{"cat/self", "."}, {"cat/up", ".."},
                              {"cat/root", "../.."}}) {
    SCOPED_TRACE(link);
    fs::create_directory_symlink(target, root / link);
    const std::string msg = error_of([&] { io::ImageFolder g(root.string()); });
    EXPECT_NE(msg.find((root / link).string() + " leads back to"), std::string::npos) << msg;
    fs::remove(root / link);
  }
  // Two links leading to each other: neither is inside the other's directory.
  fs::create_directory_symlink("../dog", root / "elsewhere/to_dog");
  fs::remove(root / "dog/more");
  fs::create_directory_symlink("../elsewhere", root / "dog/more");
  EXPECT_NE(error_of([&] { io::ImageFolder g(root.string()); }).find("leads back to"), std::string::npos);
  fs::remove_all(root);
}

}  // namespace
}  // namespace strider
