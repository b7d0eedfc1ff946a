// Token files: nanoGPT raw uint16, llm.c headers (uint16 and uint32), raw uint32, and bad files.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "io/reader_test_util.h"

namespace strider {
namespace {

using testing::data_path;
using testing::error_of;
using testing::int_values;
using testing::write_file;

std::vector<int64_t> expected_uint16(int64_t start, int64_t len) {  // make_golden.py's tokens
  std::vector<int64_t> v;
  for (int64_t i = start; i < start + len; ++i) v.push_back(i * 37 % 50257);
  return v;
}

TEST(TokenFile, ReadsNanoGptAndLlmcFiles) {
  for (const char* name : {"tokens/nanogpt_uint16.bin", "tokens/llmc_v1.bin"}) {
    SCOPED_TRACE(name);
    io::TokenFile f(data_path(name));
    EXPECT_EQ(f.size(), 300);
    EXPECT_EQ(f.dtype(), io::TokenDtype::UInt16);
    EXPECT_EQ(f.has_llmc_header(), std::string(name).find("llmc") != std::string::npos);
    Tensor w = f.window(290, 10);
    EXPECT_EQ(w.dtype(), kLong);
    EXPECT_EQ(int_values(w), expected_uint16(290, 10));
    int64_t m = 0;
    for (int64_t v : expected_uint16(0, 300)) m = std::max(m, v);
    EXPECT_EQ(f.max_token(), m);
    EXPECT_EQ(f.max_token(), m);  // cached
  }
  io::TokenFile v2(data_path("tokens/llmc_v2.bin"));
  EXPECT_EQ(v2.dtype(), io::TokenDtype::UInt32);
  EXPECT_EQ(int_values(v2.window(299, 1))[0], int64_t{299} * 40961 % 128256);
  EXPECT_GT(v2.max_token(), 65535);
}

TEST(TokenFile, RawUint32WhenAsked) {
  std::string bytes;
  for (uint32_t t : {7u, 70000u, 3u}) for (int i = 0; i < 4; ++i) bytes += static_cast<char>((t >> (8 * i)) & 0xff);
  const std::string p = write_file("raw32.bin", bytes);
  io::TokenFile f(p, io::token_dtype_from_string("uint32"));
  EXPECT_EQ(int_values(f.window(0, 3)), (std::vector<int64_t>{7, 70000, 3}));
  EXPECT_EQ(f.max_token(), 70000);
  io::TokenFile as16(p);  // the same 12 bytes as six uint16 tokens
  EXPECT_EQ(as16.size(), 6);
  std::remove(p.c_str());
}

std::string llmc_header(int32_t magic, int32_t version, int32_t count) {
  std::string h(1024, '\0');
  for (int i = 0; i < 4; ++i) {
    h[i] = static_cast<char>((magic >> (8 * i)) & 0xff);
    h[4 + i] = static_cast<char>((version >> (8 * i)) & 0xff);
    h[8 + i] = static_cast<char>((count >> (8 * i)) & 0xff);
  }
  return h;
}

TEST(TokenFile, BadFilesAreNamedErrors) {
  struct Case {
    const char* what;
    std::string bytes;
    io::TokenDtype dtype;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"empty", "", io::TokenDtype::Auto, "is empty"},
      {"odd length", std::string(5, '\1'), io::TokenDtype::Auto, "not a multiple of the 2-byte"},
      {"not a multiple of 4", std::string(6, '\1'), io::TokenDtype::UInt32, "not a multiple of the 4-byte"},
      {"header count larger than the file", llmc_header(20240520, 1, 10) + std::string(8, '\1'), io::TokenDtype::Auto,
       "counts 10 tokens"},
      {"header count smaller than the file", llmc_header(20240520, 2, 1) + std::string(8, '\1'), io::TokenDtype::Auto,
       "counts 1 tokens"},
      {"negative count", llmc_header(20240520, 1, -4) + std::string(8, '\1'), io::TokenDtype::Auto, "counts -4"},
      {"unknown version", llmc_header(20240520, 3, 2) + std::string(4, '\1'), io::TokenDtype::Auto, "version 3"},
      {"truncated header", llmc_header(20240520, 1, 2).substr(0, 100), io::TokenDtype::Auto, "1024-byte header"},
      {"header only", llmc_header(20240520, 1, 0), io::TokenDtype::Auto, "no tokens"},
      {"dtype disagrees", llmc_header(20240520, 1, 2) + std::string(4, '\1'), io::TokenDtype::UInt32,
       "says uint16 tokens"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string p = write_file("bad.bin", c.bytes);
    const std::string msg = error_of([&] { io::TokenFile f(p, c.dtype); });
    EXPECT_NE(msg.find(p), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
    std::remove(p.c_str());
  }
  io::TokenFile f(data_path("tokens/nanogpt_uint16.bin"));
  EXPECT_NE(error_of([&] { f.window(295, 6); }).find("outside the file's 300 tokens"), std::string::npos);
  EXPECT_NE(error_of([&] { f.window(-1, 2); }).find("window"), std::string::npos);
  EXPECT_NE(error_of([&] { f.window(INT64_MAX, INT64_MAX); }).find("outside"), std::string::npos);
  EXPECT_NE(error_of([] { io::token_dtype_from_string("int8"); }).find("auto, uint16 or uint32"), std::string::npos);
}

}  // namespace
}  // namespace strider
