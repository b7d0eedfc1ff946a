#pragma once
// Counter-based random numbers (Philox4x32-10; Salmon et al., "Parallel random numbers: as easy
// as 1, 2, 3", SC 2011): the draw for an element is a pure function of a 64-bit key and the
// element's index, with no state carried from one draw to the next. Any subset of a tensor's
// elements (one rank's shard) can therefore be generated alone and equals those elements of
// the whole tensor generated at once. Deferred initialization keys it by (seed, parameter name).
#include <array>
#include <cstdint>
#include <string_view>

namespace strider {

// A key for the stream `name` under `seed` (FNV-1a of the name, mixed with the seed by SplitMix64).
uint64_t counter_rng_key(uint64_t seed, std::string_view name);
// Philox4x32-10 itself: four random words for a 128-bit counter and a 64-bit key.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);
// Uniform on [0, 1) with 53 random bits, from the draw for `index`.
double counter_uniform(uint64_t key, uint64_t index);
// Standard normal (Box-Muller on the draw for `index`).
double counter_normal(uint64_t key, uint64_t index);

}  // namespace strider
