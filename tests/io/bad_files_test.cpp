// Crafted bad files: every one is a strider::Error naming the file and what is wrong, never a
// crash, a hang or a silent load. Table-driven, so each class of corruption is one row.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "support/idx_file.h"
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace strider {
namespace {

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("strider_bad_" + std::to_string(::getpid()) + "_" + name)).string();
}

// A safetensors file from a header text and a data section, as another tool could write it.
std::string craft(const std::string& name, const std::string& header, const std::string& data, int64_t len_delta = 0) {
  const std::string p = temp(name);
  std::ofstream f(p, std::ios::binary);
  const uint64_t len = static_cast<uint64_t>(static_cast<int64_t>(header.size()) + len_delta);
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>(len >> (8 * i)));
  f << header << data;
  return p;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct BadSafetensors {
  const char* what;
  std::string header, data;
  int64_t len_delta;
  const char* expect;  // a piece of the message
};

TEST(BadFiles, SafetensorsStructureIsValidatedBeforeAllocating) {
  const std::string f8(8, '\0');
  const std::vector<BadSafetensors> cases = {
      {"length beyond the file", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", f8, 1000, "header length"},
      {"header not JSON", "{not json", "", 0, "not valid JSON"},
      {"header an array", "[1,2,3]", "", 0, "must be a JSON object"},
      {"entry not an object", R"({"a":7})", "", 0, "must be a JSON object"},
      {"dtype a number", R"({"a":{"dtype":5,"shape":[2],"data_offsets":[0,8]}})", f8, 0, "'dtype' must be a string"},
      {"unknown dtype", R"({"a":{"dtype":"F8","shape":[2],"data_offsets":[0,8]}})", f8, 0, "unsupported dtype"},
      {"missing shape", R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", f8, 0, "needs 'dtype', 'shape'"},
      {"unknown field", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", f8, 0, "unknown field"},
      {"shape a string", R"({"a":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})", f8, 0, "'shape' must be an array"},
      {"negative size", R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", f8, 0, "non-negative integers"},
      {"fractional size", R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", f8, 0, "non-negative integers"},
      {"element count overflow", R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", f8, 0,
       "64-bit"},
      {"byte count overflow", R"({"a":{"dtype":"F64","shape":[2305843009213693952,2],"data_offsets":[0,8]}})", f8, 0,
       "too large"},
      {"offsets reversed", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", f8, 0, "data_offsets"},
      {"offsets not numbers", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":["0","8"]}})", f8, 0, "two non-negative"},
      {"size disagrees with shape", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", f8, 0, "needs 12"},
      {"overlapping tensors",
       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
       f8, 0, "overlap"},
      {"gap between tensors",
       R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[0],"data_offsets":[8,8]}})",
       f8, 0, "gap"},
      {"data beyond the file", R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", f8, 0, "truncated"},
      {"trailing bytes", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", f8, 0, "trailing"},
      {"a bool that is neither", R"({"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", std::string("\x01\x07", 2),
       0, "element 1 has byte value 7"},
      {"metadata not strings", R"({"__metadata__":{"epoch":1}})", "", 0, "must be a string"},
      {"metadata an array", R"({"__metadata__":[1]})", "", 0, "must be an object"},
      {"malformed checksum", R"({"__metadata__":{"strider.checksum":"xyz"}})", "", 0, "malformed"},
  };
  for (const BadSafetensors& c : cases) {
    const std::string p = craft("case.safetensors", c.header, c.data, c.len_delta);
    const std::string msg = error_of([&] { io::load_safetensors(p); });
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.what << ": got '" << msg << "'";
    EXPECT_NE(msg.find(p), std::string::npos) << c.what << ": the message must name the file: " << msg;
    std::remove(p.c_str());
  }
  // Not files at all.
  EXPECT_NE(error_of([] { io::load_safetensors("/dev/zero"); }).find("not a regular file"), std::string::npos);
  EXPECT_NE(error_of([] { io::load_safetensors("/tmp"); }).find("directory"), std::string::npos);
  EXPECT_NE(error_of([] { io::load_safetensors("/nonexistent/x.safetensors"); }).find("cannot open"), std::string::npos);
  const std::string fifo = temp("fifo.safetensors");  // opening it blocked until a writer came
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_NE(error_of([&] { io::load_safetensors(fifo); }).find(fifo + " is not a regular file (it is a FIFO)"),
            std::string::npos);
  std::remove(fifo.c_str());
  const std::string tiny = craft("tiny", "", "", -8);
  std::filesystem::resize_file(tiny, 3);
  EXPECT_NE(error_of([&] { io::load_safetensors(tiny); }).find("too short"), std::string::npos);
  std::remove(tiny.c_str());
}

TEST(BadFiles, ForeignFilesLoadButNotWhereAChecksumIsRequired) {
  const std::string p = craft("foreign.safetensors",
                              R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                              std::string("\0\0\x80?\0\0\0@", 8));
  io::SafetensorsFile f = io::load_safetensors(p);
  EXPECT_FALSE(f.checksummed);
  EXPECT_EQ(f.tensors.at("w")[1].item<float>(), 2.0f);
  EXPECT_NE(error_of([&] { io::load_safetensors(p, {.require_checksum = true}); }).find("no strider checksum"),
            std::string::npos);
  std::remove(p.c_str());
}

// Any single flipped byte, in the header (a dtype, a shape, the epoch) or the data, is caught.
TEST(BadFiles, TheChecksumCoversHeaderAndData) {
  const std::string p = temp("flip.safetensors");
  io::save_safetensors(p, {{"w", arange(6).to(kFloat).reshape({2, 3})}, {"v", arange(4)}}, {{"epoch", "1"}});
  std::string bytes;
  {
    std::ifstream in(p, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_TRUE(io::load_safetensors(p, {.require_checksum = true}).checksummed);
  // Checksum required, as for resuming: a flip inside the checksum's own key would otherwise
  // make the file look foreign (its data still intact).
  auto flipped = [&](size_t at, char to) {
    std::string b = bytes;
    b[at] = to;
    std::ofstream(p, std::ios::binary | std::ios::trunc) << b;
    return error_of([&] { io::load_safetensors(p, {.require_checksum = true}); });
  };
  EXPECT_NE(flipped(bytes.find("F32") + 1, '6').find("load_safetensors"), std::string::npos);  // F32 -> F64
  EXPECT_NE(flipped(bytes.find("\"epoch\":\"1\"") + 9, '7').find("checksum mismatch"), std::string::npos);
  EXPECT_NE(flipped(bytes.find("[2,3]") + 1, '1').find("load_safetensors"), std::string::npos);
  EXPECT_NE(flipped(bytes.size() - 2, '\x55').find("checksum mismatch"), std::string::npos);
  // Every byte position: none loads silently.
  size_t silent = 0;
  for (size_t i = 0; i < bytes.size(); ++i)
    if (flipped(i, static_cast<char>(bytes[i] ^ 0x20)).empty()) {
      ++silent;
      ADD_FAILURE() << "flipping byte " << i << " (" << bytes[i] << ") loads silently";
    }
  EXPECT_EQ(silent, 0u);
  std::remove(p.c_str());
}

TEST(BadFiles, SavingRemovesTemporariesOfKilledWriters) {
  const std::string p = temp("stale.safetensors");
  const std::string dead = p + ".tmp.999999999", live = p + ".tmp." + std::to_string(::getppid());
  std::ofstream(dead) << "partial write of a killed process";
  std::ofstream(live) << "a running writer";
  io::save_safetensors(p, {{"x", ones({3})}});
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(live));  // its writer may still finish
  std::remove(live.c_str());
  std::remove(p.c_str());
}

using testing::write_idx_gz;

TEST(BadFiles, IdxAndFashionMnist) {
  const std::string p = temp("bad.idx.gz");
  write_idx_gz(p, {65536, 65536, 65536, 65536, 65536}, {});  // element count overflows
  const std::string overflow = error_of([&] { io::read_idx(p); });
  EXPECT_NE(overflow.find("64-bit"), std::string::npos);
  EXPECT_NE(overflow.find(p), std::string::npos) << overflow;
  write_idx_gz(p, {}, {});
  EXPECT_NE(error_of([&] { io::read_idx(p); }).find("declares 0 dimensions"), std::string::npos);
  // A gzip stream cut short: the message is zlib's, read before the stream is closed.
  write_idx_gz(p, {4, 4}, std::vector<uint8_t>(16, 1));
  std::filesystem::resize_file(p, std::filesystem::file_size(p) - 6);
  const std::string cut = error_of([&] { io::read_idx(p); });
  EXPECT_NE(cut.find("corrupt or truncated"), std::string::npos) << cut;
  // A label outside the classes in the test split is an error, not a 0% score.
  const std::string dir = temp("fmnist");
  std::filesystem::create_directories(dir);
  for (const char* split : {"train", "t10k"}) {
    write_idx_gz(dir + "/" + split + "-images-idx3-ubyte.gz", {3, 28, 28}, std::vector<uint8_t>(3 * 784, 9));
    write_idx_gz(dir + "/" + split + "-labels-idx1-ubyte.gz", {3}, {1, static_cast<uint8_t>(std::string(split) == "t10k" ? 200 : 2), 3});
  }
  EXPECT_NO_THROW(io::load_fashion_mnist(dir, "train"));
  EXPECT_NE(error_of([&] { io::load_fashion_mnist(dir, "test"); }).find("label 200 at index 1"), std::string::npos);
  // Images of another size (the audit's dimensions swapped: 784x1) are named with their file.
  write_idx_gz(dir + "/train-images-idx3-ubyte.gz", {3, 784, 1}, std::vector<uint8_t>(3 * 784, 9));
  EXPECT_NE(error_of([&] { io::load_fashion_mnist(dir, "train"); })
                .find(dir + "/train-images-idx3-ubyte.gz holds 3 images of 784x1 pixels; Fashion-MNIST's are 28x28"),
            std::string::npos);
  std::filesystem::remove_all(dir);
  std::remove(p.c_str());
}

// The peak resident memory of this process, in bytes.
int64_t peak_rss() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return int64_t{u.ru_maxrss} * 1024;
}

// A gzip bomb: an IDX header declaring `declared` labels followed by `zeros` bytes, written
// in chunks so the test itself never holds them.
void write_idx_bomb(const std::string& path, uint32_t declared, size_t zeros) {
  gzFile f = gzopen(path.c_str(), "wb9");
  const unsigned char head[8] = {0, 0, 0x08, 1, static_cast<unsigned char>(declared >> 24),
                                 static_cast<unsigned char>(declared >> 16), static_cast<unsigned char>(declared >> 8),
                                 static_cast<unsigned char>(declared)};
  gzwrite(f, head, 8);
  const std::vector<unsigned char> chunk(1 << 20, 0);
  for (size_t left = zeros; left > 0; left -= std::min(left, chunk.size()))
    gzwrite(f, chunk.data(), static_cast<unsigned>(std::min(left, chunk.size())));
  gzclose(f);
}

TEST(BadFiles, IdxReadsNoMoreThanItsHeaderDeclares) {
  // 256 MiB of zeros behind a header declaring 3 labels: the reader stops one byte past the
  // declared size instead of inflating everything first (the audit's 1.6 MB file held 1.6 GB).
  const std::string p = temp("bomb.idx.gz");
  write_idx_bomb(p, 3, size_t{256} << 20);
  const int64_t before = peak_rss();
  const std::string more = error_of([&] { io::read_idx(p); });
  EXPECT_LT(peak_rss() - before, int64_t{32} << 20) << "reading the bomb raised the peak memory";
  EXPECT_NE(more.find(p), std::string::npos) << more;
  EXPECT_NE(more.find("declares shape [3]"), std::string::npos) << more;
  EXPECT_NE(more.find("holds more"), std::string::npos) << more;
  // A header declaring more than the file could hold even compressed fails before allocating.
  write_idx_gz(p, {60000, 60000, 28}, std::vector<uint8_t>(100, 1));
  const std::string huge = error_of([&] { io::read_idx(p); });
  EXPECT_NE(huge.find("more than a file of"), std::string::npos) << huge;
  // A header of 255 dimensions is abbreviated in the message, not printed whole.
  write_idx_gz(p, std::vector<uint32_t>(255, 7), {});
  const std::string deep = error_of([&] { io::read_idx(p); });
  EXPECT_NE(deep.find("(255 dimensions)"), std::string::npos) << deep;
  EXPECT_LT(deep.size(), 400u) << deep;
  // An exact file still loads.
  write_idx_gz(p, {2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor ok = io::read_idx(p);
  EXPECT_EQ(ok.sizes(), (DimVector{2, 3}));
  EXPECT_EQ(ok.data_ptr<uint8_t>()[5], 6);
  std::remove(p.c_str());
}

TEST(BadFiles, DataLoaderChecksLabelsAndCarriesWorkerErrors) {
  io::ImageDataset more_labels{zeros({4, 1, 2, 2}).to(kByte), zeros({9}).to(kLong)};
  EXPECT_NE(error_of([&] { io::DataLoader(more_labels, {.batch_size = 2}); }).find("one per image"), std::string::npos);
  // An error while a batch is prepared on the prefetch thread reaches the consumer.
  io::ImageDataset ok{zeros({4, 1, 2, 2}).to(kByte), zeros({4}).to(kLong)};
  io::DataLoader loader(ok, {.batch_size = 2, .memory_format = MemoryFormat::ChannelsLast3d});  // 4-d batches cannot be
  loader.start_epoch(0);
  EXPECT_THROW(
      {
        while (loader.next()) {
        }
      },
      Error);
}

TEST(BadFiles, TextFiles) {
  EXPECT_NE(error_of([] { io::load_text_file("/tmp"); }).find("not a regular file"), std::string::npos);
  EXPECT_NE(error_of([] { io::load_text_file("/nonexistent"); }).find("missing"), std::string::npos);
}

}  // namespace
}  // namespace strider
