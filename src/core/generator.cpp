#include "strider/core/generator.h"

#include "strider/core/context.h"

#include <cmath>
#include <numbers>

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

Generator& default_generator() { return Context::process().default_generator(); }

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace strider
