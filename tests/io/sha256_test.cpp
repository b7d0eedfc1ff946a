// SHA-256 against FIPS 180-4's examples, fed whole and in uneven pieces; tensor digests depend on
// values, names and shapes but not on memory format.
#include <gtest/gtest.h>
#include <strider/strider.h>

namespace strider {
namespace {

std::string digest(const std::string& text, size_t piece) {
  io::Sha256 h;
  for (size_t i = 0; i < text.size(); i += piece) h.update(std::string_view(text).substr(i, piece));
  return h.hex_digest();
}

TEST(Sha256, StandardVectors) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {std::string(1000000, 'a'), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"}};
  for (const auto& [text, want] : cases)
    for (size_t piece : {size_t{1}, size_t{7}, size_t{64}, size_t{1} << 20}) EXPECT_EQ(digest(text, piece), want) << piece;
}

TEST(Sha256, TensorDigestFollowsValuesNotLayout) {
  manual_seed(3);
  Tensor x = randn({2, 3, 4, 5});
  const std::string base = io::tensors_sha256({{"w", x}});
  EXPECT_EQ(io::tensors_sha256({{"w", x.contiguous(MemoryFormat::ChannelsLast)}}), base);
  EXPECT_NE(io::tensors_sha256({{"v", x}}), base);
  EXPECT_NE(io::tensors_sha256({{"w", x.reshape({6, 4, 5})}}), base);
  Tensor y = x.clone();
  y.reshape({-1}).narrow(0, 7, 1).fill_(0.5);
  EXPECT_NE(io::tensors_sha256({{"w", y}}), base);
}

}  // namespace
}  // namespace strider
