#pragma once
// Generator: a seeded random source for rand/randn/init. A given seed gives the same numbers on
// every machine and thread count (one stream, consumed in logical element order).
#include <cstdint>
#include <random>
#include <string>

namespace strider {

class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ull) : engine_(seed), seed_(seed) {}
  // Also drops the Box-Muller spare, so a seed repeats its normals exactly (as PyTorch resets
  // its cached normal sample).
  void manual_seed(uint64_t seed) {
    engine_.seed(seed);
    seed_ = seed;
    has_spare_ = false;
  }
  uint64_t initial_seed() const { return seed_; }
  // Uniform in [0, 1) with 24 (float) or 53 (double) random bits.
  float uniform_float() { return static_cast<float>(engine_() >> 40) * 0x1.0p-24f; }
  double uniform_double() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  uint64_t next_u64() { return engine_(); }
  // Standard normal by the Box-Muller transform.
  double normal();
  // The whole state as text (engine, seed, the Box-Muller spare), for checkpoints; set_state
  // restores it exactly and throws strider::Error (the generator unchanged) on malformed text.
  std::string state() const;
  void set_state(const std::string& text);

 private:
  std::mt19937_64 engine_;
  uint64_t seed_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// The generator used when an op is not given one. Seed it with manual_seed().
Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace strider
