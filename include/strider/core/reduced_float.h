#pragma once
// bfloat16 and float16 storage types. Arithmetic happens in float32: load, compute, store
// with round-to-nearest-even, the way PyTorch's CPU kernels treat both types.
#include <bit>
#include <cstdint>
#include <type_traits>

namespace strider {

struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  BFloat16(float f) : bits(round_from_float(f)) {}
  operator float() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

  // Branch-free so loops over bfloat16 vectorize: round to nearest even, NaN stays a quiet NaN.
  static uint16_t round_from_float(float f) {
    const uint32_t u = std::bit_cast<uint32_t>(f);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u : rounded);
  }
};

struct Half {
  uint16_t bits = 0;

  Half() = default;
  Half(float f) : bits(from_float(f)) {}
  operator float() const { return to_float(bits); }

  static uint16_t from_float(float f) {
    uint32_t x = std::bit_cast<uint32_t>(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    x &= 0x7fffffffu;
    if (x > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
    if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
    if (x < 0x38800000u) {                                               // subnormal or zero
      float magic = std::bit_cast<float>(x) + 0.5f;  // aligns the mantissa, rounds to even
      return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(magic) - 0x3f000000u));
    }
    uint32_t mant_odd = (x >> 13) & 1u;
    x += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
    return static_cast<uint16_t>(sign | (x >> 13));
  }

  static float to_float(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {  // zero or subnormal: value = mant * 2^-24
      float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
      return sign ? -v : v;
    }
    return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  }
};

// Writes v into dst. For the 16-bit floats it assigns the bits directly: assigning a freshly
// constructed struct defeats GCC's loop vectorizer.
// A floating value stored into an integer type truncates as PyTorch does on x86, whose
// conversions give the "integer indefinite" (the type's minimum) for NaN and values out of range:
// int64 and uint8 (c10 casts it through int64, keeping the low bits) convert through int64,
// int32 through int32 (NaN or beyond int32: INT32_MIN, not int64's low bits). C++ leaves
// out-of-range float-to-integer conversions undefined, so the ranges are checked here.
template <class T, class V>
inline void store_as(T& dst, V v) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    dst.bits = BFloat16::round_from_float(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, Half>) {
    dst.bits = Half::from_float(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, int32_t> && !std::is_integral_v<V>) {
    const double d = static_cast<double>(v);
    dst = d > -2147483649.0 && d < 2147483648.0 ? static_cast<int32_t>(d) : INT32_MIN;
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_integral_v<V>) {
    const double d = static_cast<double>(v);
    dst = static_cast<T>(d > -9.2e18 && d < 9.2e18 ? static_cast<int64_t>(d) : INT64_MIN);
  } else {
    dst = static_cast<T>(v);
  }
}

}  // namespace strider
