#pragma once
// Runs a templated lambda with the C++ type of a runtime ScalarType:
//   dispatch_all(t.dtype(), "op", [&]<class T>() { ... T ... });
#include "strider/core/error.h"
#include "strider/core/scalar_type.h"

namespace strider {

template <class F>
decltype(auto) dispatch_all(ScalarType t, const char* op, F&& f) {
  switch (t) {
    case ScalarType::Float: return f.template operator()<float>();
    case ScalarType::Double: return f.template operator()<double>();
    case ScalarType::BFloat16: return f.template operator()<BFloat16>();
    case ScalarType::Half: return f.template operator()<Half>();
    case ScalarType::Long: return f.template operator()<int64_t>();
    case ScalarType::Int: return f.template operator()<int32_t>();
    case ScalarType::Byte: return f.template operator()<uint8_t>();
    case ScalarType::Bool: return f.template operator()<bool>();
  }
  STRIDER_CHECK(false, op, "unknown dtype ", static_cast<int>(t));
  return f.template operator()<float>();
}

template <class F>
decltype(auto) dispatch_floating(ScalarType t, const char* op, F&& f) {
  switch (t) {
    case ScalarType::Float: return f.template operator()<float>();
    case ScalarType::Double: return f.template operator()<double>();
    case ScalarType::BFloat16: return f.template operator()<BFloat16>();
    case ScalarType::Half: return f.template operator()<Half>();
    default: break;
  }
  STRIDER_CHECK(false, op, "expected a floating-point tensor (float32, float64, bfloat16 or "
                "float16) but got ", t, "; convert it first with .to(kFloat)");
  return f.template operator()<float>();
}

}  // namespace strider
