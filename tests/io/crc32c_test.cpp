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

// Long buffers take the three-lane path; every length and alignment around its stripes.
TEST(Crc32c, LongBuffersMatchTheReferenceAtEveryOffsetAndLength) {
  std::vector<unsigned char> d(3 * 3 * 4096 + 200);
  uint32_t x = 12345;
  for (auto& b : d) b = static_cast<unsigned char>((x = x * 1664525u + 1013904223u) >> 24);
  for (size_t start : {size_t{0}, size_t{1}, size_t{5}, size_t{8}})
    for (size_t n : std::vector<size_t>{3 * 4096 - 1, 3 * 4096, 3 * 4096 + 7, 2 * 3 * 4096 + 100, d.size() - 8}) {
      const std::vector<unsigned char> part(d.begin() + start, d.begin() + start + n);
      EXPECT_EQ(io::crc32c(0, part.data(), part.size()), bitwise(part)) << start << " " << n;
      const uint32_t head = io::crc32c(0, part.data(), 13);
      EXPECT_EQ(io::crc32c(head, part.data() + 13, n - 13), bitwise(part)) << start << " " << n;
    }
}

}  // namespace
}  // namespace strider
