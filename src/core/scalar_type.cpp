#include "strider/core/scalar_type.h"

#include <string>

#include "strider/core/error.h"

namespace strider {

std::string_view to_string(ScalarType t) {
  switch (t) {
    case ScalarType::Float: return "float32";
    case ScalarType::Double: return "float64";
    case ScalarType::BFloat16: return "bfloat16";
    case ScalarType::Half: return "float16";
    case ScalarType::Long: return "int64";
    case ScalarType::Int: return "int32";
    case ScalarType::Byte: return "uint8";
    case ScalarType::Bool: return "bool";
  }
  return "unknown";
}

ScalarType scalar_type_from_string(std::string_view name) {
  for (int i = 0; i < kNumScalarTypes; ++i) {
    auto t = static_cast<ScalarType>(i);
    if (to_string(t) == name) return t;
  }
  if (name == "float") return kFloat;
  if (name == "double") return kDouble;
  if (name == "half") return kHalf;
  if (name == "long") return kLong;
  if (name == "int") return kInt;
  STRIDER_CHECK(false, "dtype", "unknown dtype '", std::string(name),
                "'; use one of float32, float64, bfloat16, float16, int64, int32, uint8, bool");
  return kFloat;
}

std::ostream& operator<<(std::ostream& os, ScalarType t) { return os << to_string(t); }

ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  if (a == kBool) return b;
  if (b == kBool) return a;
  bool fa = is_floating_point(a), fb = is_floating_point(b);
  if (fa && !fb) return a;
  if (fb && !fa) return b;
  if (fa && fb) {
    if (a == kDouble || b == kDouble) return kDouble;
    return kFloat;  // float32 with a 16-bit float, or bfloat16 with float16
  }
  // both integral: the wider signed type (uint8 with any signed type gives the signed one)
  auto rank = [](ScalarType t) { return t == kByte ? 0 : t == kInt ? 1 : 2; };
  return rank(a) >= rank(b) ? a : b;
}

}  // namespace strider
