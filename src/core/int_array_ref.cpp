#include "strider/core/int_array_ref.h"

#include "strider/core/error.h"

namespace strider {

std::ostream& operator<<(std::ostream& os, IntArrayRef dims) {
  os << '[';
  for (size_t i = 0; i < dims.size(); ++i) os << (i ? ", " : "") << dims[i];
  return os << ']';
}

int64_t checked_numel(IntArrayRef sizes, const char* op) {
  int64_t nonzero = 1;
  bool any_zero = false;
  for (int64_t d : sizes) {
    STRIDER_CHECK(d >= 0, op, "negative dimension in size ", sizes, "; sizes must be >= 0");
    if (d == 0) {
      any_zero = true;
      continue;
    }
    STRIDER_CHECK(!__builtin_mul_overflow(nonzero, d, &nonzero), op, "size ", sizes,
                  " has more elements than fit in a 64-bit count");
  }
  return any_zero ? 0 : nonzero;
}

}  // namespace strider
