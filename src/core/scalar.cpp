#include "strider/core/scalar.h"

namespace strider {

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Floating: return os << s.to_double();
    case Scalar::Kind::Integral: return os << s.to_long();
    case Scalar::Kind::Boolean: return os << (s.to_bool() ? "True" : "False");
  }
  return os;
}

}  // namespace strider
