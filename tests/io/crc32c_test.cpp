// CRC-32C against its published check value and a bitwise reference, in any split.
#include <gtest/gtest.h>
#include <strider/io/crc32c.h>

#include <string>
#include <vector>

namespace strider {
namespace {

uint32_t bitwise(const std::vector<unsigned char>& d) {
  uint32_t c = ~0u;
  for (unsigned char b : d) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
  }
  return ~c;
}

TEST(Crc32c, MatchesTheCheckValueAndAReferenceInAnySplit) {
  const std::string check = "123456789";
  EXPECT_EQ(io::crc32c(0, check.data(), check.size()), 0xe3069283u);
  EXPECT_EQ(io::crc32c_hex(0xe3069283u), "e3069283");
  std::vector<unsigned char> d(1000);
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<unsigned char>(i * 131 + 7);
  const uint32_t want = bitwise(d);
  for (size_t cut : {0, 1, 3, 8, 13, 500, 999, 1000}) {
    const uint32_t a = io::crc32c(0, d.data(), cut);
    EXPECT_EQ(io::crc32c(a, d.data() + cut, d.size() - cut), want) << cut;
  }
  EXPECT_EQ(io::crc32c(0, d.data() + 1, 0), 0u);
}

}  // namespace
}  // namespace strider
