#include "strider/core/generator.h"

#include "strider/core/context.h"
#include "strider/core/error.h"

#include <bit>
#include <cmath>
#include <numbers>
#include <sstream>

namespace strider {

double Generator::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u1 = 1.0 - uniform_double();  // (0, 1], so log() is finite
  double u2 = uniform_double();
  double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = r * std::sin(2.0 * std::numbers::pi * u2);
  has_spare_ = true;
  return r * std::cos(2.0 * std::numbers::pi * u2);
}

std::string Generator::state() const {
  std::ostringstream s;
  s << engine_ << ' ' << seed_ << ' ' << (has_spare_ ? 1 : 0) << ' ' << std::bit_cast<uint64_t>(spare_);
  return s.str();
}

void Generator::set_state(const std::string& text) {
  std::istringstream s(text);
  std::mt19937_64 engine;
  uint64_t seed = 0, spare_bits = 0;
  int has_spare = -1;
  s >> engine >> seed >> has_spare >> spare_bits;
  std::string rest;
  const bool ok = !s.fail() && (has_spare == 0 || has_spare == 1) && !(s >> rest);
  STRIDER_CHECK(ok, "Generator::set_state", "malformed generator state (", text.size(),
                " characters); expected the text Generator::state() writes");
  engine_ = engine;
  seed_ = seed;
  has_spare_ = has_spare == 1;
  spare_ = std::bit_cast<double>(spare_bits);
}

Generator& default_generator() { return Context::process().default_generator(); }

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace strider
