#include "strider/core/int_array_ref.h"

namespace strider {

std::ostream& operator<<(std::ostream& os, IntArrayRef dims) {
  os << '[';
  for (size_t i = 0; i < dims.size(); ++i) os << (i ? ", " : "") << dims[i];
  return os << ']';
}

}  // namespace strider
