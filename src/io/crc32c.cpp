#include "strider/io/crc32c.h"

#include <nmmintrin.h>

#include <array>
#include <cstdio>
#include <cstring>

namespace strider::io {
namespace {

constexpr uint32_t kPolynomial = 0x82f63b78u;  // reflected Castagnoli polynomial

std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    t[i] = c;
  }
  return t;
}

uint32_t crc_table(uint32_t crc, const unsigned char* p, size_t n) {
  static const std::array<uint32_t, 256> table = make_table();
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

// Eight bytes per instruction, after a byte-wise start up to 8-byte alignment.
__attribute__((target("sse4.2"))) uint32_t crc_sse42(uint32_t crc, const unsigned char* p, size_t n) {
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7)) {
    crc = _mm_crc32_u8(crc, *p++);
    --n;
  }
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
    p += 8;
    n -= 8;
  }
  crc = static_cast<uint32_t>(c);
  while (n-- > 0) crc = _mm_crc32_u8(crc, *p++);
  return crc;
}

// a(x) * b(x) mod P(x) in the reflected bit order (bit 31 is x^0).
uint32_t multiply_mod_p(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPolynomial : b >> 1;
  }
  return product;
}

// x^(8 * bytes) mod P: what running a register over `bytes` zero bytes multiplies it by.
uint32_t shift_by_bytes(uint64_t bytes) {
  uint32_t result = 1u << 31, power = 1u << 23;  // 1 and x^8
  for (; bytes != 0; bytes >>= 1) {
    if (bytes & 1) result = multiply_mod_p(power, result);
    power = multiply_mod_p(power, power);
  }
  return result;
}

// The crc32 instruction has a latency of three cycles but issues every cycle, so one chain of
// updates runs at a third of the hardware's speed. Three independent lanes over adjacent thirds
// of each stripe run at full speed; the register is linear, so the lanes join as
// crc(A B) = crc(A) * x^(8|B|) xor crc_from_zero(B).
constexpr size_t kLaneBytes = 4096;

__attribute__((target("sse4.2"))) uint32_t crc_sse42_3way(uint32_t crc, const unsigned char* p, size_t n) {
  static const uint32_t lane_shift = shift_by_bytes(kLaneBytes);
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7)) {
    crc = _mm_crc32_u8(crc, *p++);
    --n;
  }
  for (; n >= 3 * kLaneBytes; p += 3 * kLaneBytes, n -= 3 * kLaneBytes) {
    uint64_t a = crc, b = 0, c = 0;
    for (size_t i = 0; i < kLaneBytes; i += 8) {
      uint64_t wa, wb, wc;
      std::memcpy(&wa, p + i, 8);
      std::memcpy(&wb, p + kLaneBytes + i, 8);
      std::memcpy(&wc, p + 2 * kLaneBytes + i, 8);
      a = _mm_crc32_u64(a, wa);
      b = _mm_crc32_u64(b, wb);
      c = _mm_crc32_u64(c, wc);
    }
    const uint32_t ab = multiply_mod_p(lane_shift, static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b);
    crc = multiply_mod_p(lane_shift, ab) ^ static_cast<uint32_t>(c);
  }
  return crc_sse42(crc, p, n);
}

bool has_sse42() {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}

}  // namespace

uint32_t crc32c(uint32_t crc, const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  crc = has_sse42() ? crc_sse42_3way(crc, p, bytes) : crc_table(crc, p, bytes);
  return ~crc;
}

std::string crc32c_hex(uint32_t crc) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", crc);
  return buf;
}

}  // namespace strider::io
