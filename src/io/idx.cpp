#include "strider/io/idx.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "strider/autograd/functions.h"
#include "strider/ops/factory.h"

namespace strider::io {
namespace {

constexpr const char* kOp = "read_idx";

// Deflate expands at most about 1032:1, so a gzip file of n bytes holds at most this many.
constexpr uint64_t kMaxInflateRatio = 1032;

// An open IDX file; gzread reads plain files too, so one path serves .gz and uncompressed files.
class IdxStream {
 public:
  explicit IdxStream(const std::string& path) : path_(path) {
    STRIDER_CHECK(std::filesystem::exists(path), kOp, "file not found: ", path,
                  " (Fashion-MNIST comes from Debian's dataset-fashion-mnist package)");
    std::error_code ec;
    STRIDER_CHECK(std::filesystem::is_regular_file(path, ec), kOp, path, " is not a regular file");
    file_size_ = std::filesystem::file_size(path, ec);
    f_ = gzopen(path.c_str(), "rb");
    STRIDER_CHECK(f_ != nullptr, kOp, "cannot open ", path);
  }
  ~IdxStream() { gzclose(f_); }
  IdxStream(const IdxStream&) = delete;
  IdxStream& operator=(const IdxStream&) = delete;

  uint64_t file_size() const { return file_size_; }

  // Reads up to n bytes (fewer only at the end of the data); a zlib error names the file.
  size_t read(unsigned char* out, size_t n) {
    size_t got = 0;
    while (got < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - got, 1u << 30));
      const int r = gzread(f_, out + got, chunk);
      if (r <= 0) {
        int err = 0;
        const char* msg = gzerror(f_, &err);
        std::string reason = msg && *msg ? msg : "read error";
        if (reason.rfind(path_ + ": ", 0) == 0) reason.erase(0, path_.size() + 2);  // zlib names the file too
        STRIDER_CHECK(r == 0 && (err == Z_OK || err == Z_STREAM_END), kOp, "corrupt or truncated file ", path_, ": ",
                      reason);
        break;
      }
      got += static_cast<size_t>(r);
    }
    return got;
  }

 private:
  std::string path_;
  uint64_t file_size_ = 0;
  gzFile f_ = nullptr;
};

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// A shape for a message: the first dimensions and the count when there are many.
std::string shape_text(const DimVector& shape) {
  constexpr size_t kShown = 8;
  if (shape.size() <= kShown) {
    std::ostringstream s;
    s << IntArrayRef(shape);
    return s.str();
  }
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < kShown; ++i) s << shape[i] << ", ";
  s << "... (" << shape.size() << " dimensions)]";
  return s.str();
}

}  // namespace

Tensor read_idx(const std::string& path) {
  IdxStream in(path);
  // The header first, so the data is read only up to the size it declares: a file holding more
  // (a gzip bomb, or the wrong file) fails after one byte past that size, not after all of it.
  unsigned char magic[4];
  const size_t got_magic = in.read(magic, 4);
  STRIDER_CHECK(got_magic == 4 && magic[0] == 0 && magic[1] == 0, kOp, path, " is not an IDX file (bad magic)");
  STRIDER_CHECK(magic[2] == 0x08, kOp, path, ": only unsigned-byte IDX data (type 0x08) is supported, got 0x",
                std::hex, int(magic[2]));
  const int ndim = magic[3];
  STRIDER_CHECK(ndim >= 1, kOp, path, ": the header declares 0 dimensions; an IDX file has at least one");
  unsigned char dims[4 * 255];
  const size_t got_dims = in.read(dims, 4 * static_cast<size_t>(ndim));
  STRIDER_CHECK(got_dims == 4 * static_cast<size_t>(ndim), kOp, path, ": truncated header (", ndim, " dimensions need ",
                4 + 4 * ndim, " bytes, the file has ", 4 + got_dims, ")");
  DimVector shape;
  for (int i = 0; i < ndim; ++i) shape.push_back(be32(&dims[4 * i]));
  uint64_t count = 1;  // 255 dims of 2^32 overflow
  bool overflow = false;
  for (int64_t d : shape) overflow = overflow || __builtin_mul_overflow(count, static_cast<uint64_t>(d), &count);
  STRIDER_CHECK(!overflow && count <= static_cast<uint64_t>(INT64_MAX), kOp, path, ": the header declares shape ",
                shape_text(shape), ", more elements than fit in a 64-bit count; the header is corrupt");
  const size_t offset = 4 + 4 * static_cast<size_t>(ndim);
  // Before allocating: a file of n bytes cannot hold more than deflate's ratio allows.
  const uint64_t most = in.file_size() > UINT64_MAX / kMaxInflateRatio ? UINT64_MAX : in.file_size() * kMaxInflateRatio;
  STRIDER_CHECK(count <= most, kOp, path, ": the header declares shape ", shape_text(shape), " (", count,
                " data bytes), more than a file of ", in.file_size(),
                " bytes can hold even compressed; the header is corrupt");
  Tensor t = empty(shape, kByte);
  const size_t got = in.read(static_cast<unsigned char*>(t.data()), count);
  STRIDER_CHECK(got == count, kOp, path, ": expected ", count, " data bytes for shape ", shape_text(shape),
                " but the file has ", got);
  unsigned char extra;
  STRIDER_CHECK(in.read(&extra, 1) == 0, kOp, path, ": the header declares shape ", shape_text(shape), " (", offset,
                " header and ", count, " data bytes) but the file holds more; it is not the file its header describes",
                " (re-download or regenerate it)");
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
  // Another size (dimensions swapped, another dataset's files) would fail deep in the model.
  STRIDER_CHECK(images.sizes()[1] == kFashionMnistSide && images.sizes()[2] == kFashionMnistSide, "load_fashion_mnist",
                dir, "/", prefix, "-images-idx3-ubyte.gz holds ", n, " images of ", images.sizes()[1], "x",
                images.sizes()[2], " pixels; Fashion-MNIST's are ", kFashionMnistSide, "x", kFashionMnistSide,
                ". Use the dataset's own files (Debian's dataset-fashion-mnist), or --image-folder for other images");
  // A label outside the classes would train on garbage (or score 0% without saying why).
  const uint8_t* l = labels.data_ptr<uint8_t>();
  for (int64_t i = 0; i < n; ++i)
    STRIDER_CHECK(l[i] < kFashionMnistClasses, "load_fashion_mnist", dir, ": ", split, " label ", int(l[i]),
                  " at index ", i, " is outside Fashion-MNIST's classes 0..", kFashionMnistClasses - 1);
  return {images.reshape({n, 1, images.sizes()[1], images.sizes()[2]}), labels.to(kLong)};
}

}  // namespace strider::io
