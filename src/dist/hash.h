#pragma once
// FNV-1a, reduced to 63 bits so a hash can be negated in a max/min all-reduce (the ranks' way of
// checking that they all hold the same value).
#include <cstdint>
#include <string_view>

namespace strider::dist::detail {

inline uint64_t fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

inline int64_t hash63(uint64_t fnv) { return static_cast<int64_t>(fnv >> 1); }

}  // namespace strider::dist::detail
