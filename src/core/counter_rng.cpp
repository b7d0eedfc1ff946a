#include "strider/core/counter_rng.h"

#include <cmath>

namespace strider {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;    // Philox multipliers
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;  // key schedule increments

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The draw for element `index` of the stream `key`.
std::array<uint32_t, 4> draw(uint64_t key, uint64_t index) {
  return philox4x32_10({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0, 0},
                       {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
}

}  // namespace

uint64_t counter_rng_key(uint64_t seed, std::string_view name) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a 64
  for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ull;
  return splitmix64(splitmix64(seed) ^ h);
}

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key) {
  auto [c0, c1, c2, c3] = counter;
  auto [k0, k1] = key;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{kMul0} * c0, p1 = uint64_t{kMul1} * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0, n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return {c0, c1, c2, c3};
}

double counter_uniform(uint64_t key, uint64_t index) {
  const auto w = draw(key, index);
  const uint64_t bits = ((uint64_t{w[0]} << 32) | w[1]) >> 11;  // 53 bits
  return static_cast<double>(bits) * 0x1.0p-53;
}

double counter_normal(uint64_t key, uint64_t index) {
  const auto w = draw(key, index);
  const uint64_t a = ((uint64_t{w[0]} << 32) | w[1]) >> 11, b = ((uint64_t{w[2]} << 32) | w[3]) >> 11;
  const double u1 = (static_cast<double>(a) + 1.0) * 0x1.0p-53;  // (0, 1]: log is finite
  const double u2 = static_cast<double>(b) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

}  // namespace strider
