#include "strider/io/idx.h"

#include <zlib.h>

#include <filesystem>
#include <vector>

#include "strider/autograd/functions.h"
#include "strider/ops/factory.h"

namespace strider::io {
namespace {

// gzread reads plain files too, so one path serves .gz and uncompressed IDX files.
std::vector<unsigned char> read_all(const std::string& path) {
  STRIDER_CHECK(std::filesystem::exists(path), "read_idx", "file not found: ", path,
                " (Fashion-MNIST comes from Debian's dataset-fashion-mnist package)");
  std::error_code ec;
  STRIDER_CHECK(std::filesystem::is_regular_file(path, ec), "read_idx", path, " is not a regular file");
  gzFile f = gzopen(path.c_str(), "rb");
  STRIDER_CHECK(f != nullptr, "read_idx", "cannot open ", path);
  std::vector<unsigned char> data;
  unsigned char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) data.insert(data.end(), buf, buf + n);
  int err = 0;
  const char* msg = gzerror(f, &err);
  const std::string reason = msg && *msg ? msg : "read error";  // gzclose frees msg
  gzclose(f);
  STRIDER_CHECK(n == 0 && (err == Z_OK || err == Z_STREAM_END), "read_idx", "corrupt or truncated file ", path,
                ": ", reason);
  return data;
}

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

Tensor read_idx(const std::string& path) {
  std::vector<unsigned char> d = read_all(path);
  STRIDER_CHECK(d.size() >= 4 && d[0] == 0 && d[1] == 0, "read_idx", path, " is not an IDX file (bad magic)");
  STRIDER_CHECK(d[2] == 0x08, "read_idx", path, ": only unsigned-byte IDX data (type 0x08) is supported, got 0x",
                std::hex, int(d[2]));
  const int ndim = d[3];
  STRIDER_CHECK(ndim >= 1, "read_idx", path, ": the header declares 0 dimensions; an IDX file has at least one");
  STRIDER_CHECK(d.size() >= 4 + 4 * static_cast<size_t>(ndim), "read_idx", path, ": truncated header (", ndim,
                " dimensions need ", 4 + 4 * ndim, " bytes, the file has ", d.size(), ")");
  DimVector shape;
  for (int i = 0; i < ndim; ++i) shape.push_back(be32(&d[4 + 4 * i]));
  const size_t count = static_cast<size_t>(checked_numel(shape, ("read_idx " + path).c_str()));  // 255 dims of 2^32 overflow
  const size_t offset = 4 + 4 * static_cast<size_t>(ndim);
  STRIDER_CHECK(d.size() - offset == count, "read_idx", path, ": expected ", count, " data bytes for shape ",
                IntArrayRef(shape), " but the file has ", d.size() - offset);
  Tensor t = empty(shape, kByte);
  std::memcpy(t.data(), d.data() + offset, count);
  return t;
}

ImageDataset load_fashion_mnist(const std::string& dir, const std::string& split) {
  STRIDER_CHECK(split == "train" || split == "test", "load_fashion_mnist", "split must be 'train' or 'test', got '",
                split, "'");
  const std::string prefix = split == "train" ? "train" : "t10k";
  Tensor images = read_idx(dir + "/" + prefix + "-images-idx3-ubyte.gz");
  Tensor labels = read_idx(dir + "/" + prefix + "-labels-idx1-ubyte.gz");
  STRIDER_CHECK(images.dim() == 3 && labels.dim() == 1 && images.sizes()[0] == labels.sizes()[0],
                "load_fashion_mnist", "images ", images.sizes(), " and labels ", labels.sizes(), " in ", dir,
                " do not match");
  const int64_t n = images.sizes()[0];
  STRIDER_CHECK(n > 0 && images.sizes()[1] > 0 && images.sizes()[2] > 0, "load_fashion_mnist", dir, ": the ", split,
                " images are ", images.sizes(), "; expected a non-empty [N, H, W]");
  // A label outside the classes would train on garbage (or score 0% without saying why).
  const uint8_t* l = labels.data_ptr<uint8_t>();
  for (int64_t i = 0; i < n; ++i)
    STRIDER_CHECK(l[i] < kFashionMnistClasses, "load_fashion_mnist", dir, ": ", split, " label ", int(l[i]),
                  " at index ", i, " is outside Fashion-MNIST's classes 0..", kFashionMnistClasses - 1);
  return {images.reshape({n, 1, images.sizes()[1], images.sizes()[2]}), labels.to(kLong)};
}

}  // namespace strider::io
